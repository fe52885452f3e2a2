// `kubectl apiserver-upgrade completion bash|zsh|fish`: a script that completes the commands, the flags, -o's
// formats and, for commands that take one, the names of the cluster's ApiServerUpgrades (read with
// `kubectl get asu -o name` when the shell asks, so it honours the same kubeconfig). kubectl (1.26+) runs a
// plugin's completion through an executable `kubectl_complete-apiserver_upgrade` on PATH; the script also
// completes `kubectl-apiserver_upgrade` typed directly. Pure: the text only.
import { COMMANDS, SHELLS, type Shell } from './args.ts';

const FLAGS = ['-o', '--output', '-w', '--watch', '-f', '--filename', '--events', '--kubeconfig', '--context', '--all-contexts', '--contexts', '--cluster-timeout', '-h', '--help'];
/** The kubeconfig's context names, for --context and --contexts (as `kubectl config get-contexts -o name` lists them). */
const CONTEXTS = 'kubectl config get-contexts -o name 2>/dev/null';
const FORMATS = ['json', 'yaml', 'wide', 'name', 'jsonpath='];
/** Commands whose argument is an upgrade's name. */
const NAMED = COMMANDS.filter((c) => c !== 'list' && c !== 'completion' && c !== 'version');
const NAMES = "kubectl get apiserverupgrades.upgrade.apiserver.dev -o name 2>/dev/null | sed 's|.*/||'";

function bash(): string {
  return `# bash completion for kubectl apiserver-upgrade (kubectl-apiserver_upgrade)
_kubectl_apiserver_upgrade() {
  local cur prev cmd
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  cmd="\${COMP_WORDS[1]}"
  case "$prev" in
    -o|--output) COMPREPLY=($(compgen -W "${FORMATS.join(' ')}" -- "$cur")); return ;;
    -f|--filename|--kubeconfig) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --context) COMPREPLY=($(compgen -W "$(${CONTEXTS})" -- "$cur")); return ;;
    --contexts) local head="\${cur%\${cur##*,}}"; COMPREPLY=($(compgen -P "$head" -W "$(${CONTEXTS})" -- "\${cur##*,}")); return ;;
    --cluster-timeout) return ;;
  esac
  if [[ $COMP_CWORD -eq 1 ]]; then COMPREPLY=($(compgen -W "${COMMANDS.join(' ')}" -- "$cur")); return; fi
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "${FLAGS.join(' ')}" -- "$cur")); return; fi
  case "$cmd" in
    completion) COMPREPLY=($(compgen -W "${SHELLS.join(' ')}" -- "$cur")) ;;
    ${NAMED.join('|')}) COMPREPLY=($(compgen -W "$(${NAMES})" -- "$cur")) ;;
  esac
}
complete -F _kubectl_apiserver_upgrade kubectl-apiserver_upgrade kubectl_complete-apiserver_upgrade
`;
}

function zsh(): string {
  return `#compdef kubectl-apiserver_upgrade
# zsh completion for kubectl apiserver-upgrade (kubectl-apiserver_upgrade)
_kubectl_apiserver_upgrade() {
  local -a commands
  commands=(${COMMANDS.join(' ')})
  if (( CURRENT == 2 )); then _describe 'command' commands; return; fi
  case "$words[CURRENT-1]" in
    -o|--output) compadd -- ${FORMATS.join(' ')}; return ;;
    -f|--filename|--kubeconfig) _files; return ;;
    --context) compadd -- \${(f)"$(${CONTEXTS})"}; return ;;
    --contexts) compset -P '*,'; compadd -- \${(f)"$(${CONTEXTS})"}; return ;;
    --cluster-timeout) return ;;
  esac
  if [[ "$words[CURRENT]" == -* ]]; then compadd -- ${FLAGS.join(' ')}; return; fi
  case "$words[2]" in
    completion) compadd -- ${SHELLS.join(' ')} ;;
    ${NAMED.join('|')}) compadd -- \${(f)"$(${NAMES})"} ;;
  esac
}
compdef _kubectl_apiserver_upgrade kubectl-apiserver_upgrade
`;
}

function fish(): string {
  const none = `not __fish_seen_subcommand_from ${COMMANDS.join(' ')}`;
  return [
    '# fish completion for kubectl apiserver-upgrade (kubectl-apiserver_upgrade)',
    'complete -c kubectl-apiserver_upgrade -f',
    `complete -c kubectl-apiserver_upgrade -n '${none}' -a '${COMMANDS.join(' ')}'`,
    `complete -c kubectl-apiserver_upgrade -n '__fish_seen_subcommand_from ${NAMED.join(' ')}' -a '(${NAMES})'`,
    `complete -c kubectl-apiserver_upgrade -n '__fish_seen_subcommand_from completion' -a '${SHELLS.join(' ')}'`,
    `complete -c kubectl-apiserver_upgrade -s o -l output -x -a '${FORMATS.join(' ')}'`,
    'complete -c kubectl-apiserver_upgrade -s w -l watch',
    'complete -c kubectl-apiserver_upgrade -s f -l filename -r -F',
    'complete -c kubectl-apiserver_upgrade -l events -x',
    'complete -c kubectl-apiserver_upgrade -l kubeconfig -r -F',
    `complete -c kubectl-apiserver_upgrade -l context -x -a '(${CONTEXTS})'`,
    'complete -c kubectl-apiserver_upgrade -l all-contexts',
    `complete -c kubectl-apiserver_upgrade -l contexts -x -a '(${CONTEXTS})'`,
    'complete -c kubectl-apiserver_upgrade -l cluster-timeout -x',
    'complete -c kubectl-apiserver_upgrade -s h -l help',
    '',
  ].join('\n');
}

export function completionScript(shell: Shell): string {
  return shell === 'bash' ? bash() : shell === 'zsh' ? zsh() : fish();
}
