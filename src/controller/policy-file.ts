import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { parse } from 'yaml';
import type { Logger } from '../runtime/logger.ts';
import { brokenPolicy, parsePolicy, PolicyError, type Policy } from '../plan/policy.ts';

/** Reads and parses a policy file (YAML, or JSON); throws an Error naming the file and the bad entry. */
export function readPolicyFile(path: string): { policy: Policy; text: string } {
  const text = readFileSync(path, 'utf8');
  return { policy: parsePolicyText(text, path), text };
}

/** Parses the text of a policy file; throws an Error naming the source and the bad entry. */
export function parsePolicyText(text: string, source: string): Policy {
  let doc: unknown;
  try {
    // Duplicate keys are an error (the yaml package's default): a second `webhooks:` must not silently win.
    doc = parse(text, { uniqueKeys: true, prettyErrors: false });
  } catch (err) {
    throw new Error(`${source}: not YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  try {
    return parsePolicy(doc, source);
  } catch (err) {
    if (err instanceof PolicyError) throw new Error(`${source}: ${err.message}`);
    throw err;
  }
}

const digest = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 12);

/**
 * The operator's policy file (--policy-file), read again on every reconcile, so a change of the ConfigMap it
 * is mounted from applies without a restart (once the kubelet has updated the volume). The first read must
 * succeed (open throws: the operator does not start on a policy it cannot read). After that, a file that
 * cannot be read or parsed any more is a policy that allows nothing — fail closed — until it is fixed; the
 * error is logged once per distinct error, each change of the policy once.
 */
export class PolicyFile {
  readonly path: string;
  private readonly log: Logger;
  private lastText: string;
  private lastPolicy: Policy;
  private lastError: string | undefined;

  private constructor(path: string, log: Logger, text: string, policy: Policy) {
    this.path = path;
    this.log = log;
    this.lastText = text;
    this.lastPolicy = policy;
  }

  static open(path: string, log: Logger): PolicyFile {
    const { policy, text } = readPolicyFile(path);
    const f = new PolicyFile(path, log, text, policy);
    f.logLoaded('policy loaded');
    return f;
  }

  /** The policy as the file says now; a broken policy (allowing nothing) when it cannot be read or parsed. */
  current(): Policy {
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      return this.broken(`cannot read it: ${(err as Error).message}`);
    }
    if (text === this.lastText && this.lastError === undefined) return this.lastPolicy;
    try {
      this.lastPolicy = parsePolicyText(text, this.path);
    } catch (err) {
      this.lastText = text;
      return this.broken((err as Error).message);
    }
    this.lastText = text;
    this.lastError = undefined;
    this.logLoaded('policy changed');
    return this.lastPolicy;
  }

  private broken(error: string): Policy {
    if (error !== this.lastError) this.log.error('the policy file cannot be used: every ApiServerUpgrade is refused until it is fixed', { policyFile: this.path, err: error });
    this.lastError = error;
    return brokenPolicy(this.path, error);
  }

  private logLoaded(message: string): void {
    const p = this.lastPolicy;
    this.log.info(message, {
      policyFile: this.path, sha256: digest(this.lastText),
      apiserverImages: p.apiserverImages.length, agentImages: p.agentImages.length, webhooks: p.webhooks.length, webhookTokens: p.webhookTokens.length,
      manifestPaths: p.manifestPaths.length, backupDirs: p.backupDirs.length, peerCAFiles: p.peerCAFiles.length, prometheusAddresses: p.prometheusAddresses.length,
      anyKubeApiserverRepository: p.anyKubeApiserverRepository,
    });
  }
}
