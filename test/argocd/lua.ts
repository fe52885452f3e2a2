// Runs the Argo CD Lua customizations (argocd/resource_customizations/) in real Lua interpreters, the way Argo CD
// runs them (argo-cd util/lua/lua.go): the object as a Lua table in the global `obj`, only the base and table
// libraries and a "safe" os with time and date (no string, math or io: a health check or action from argocd-cm
// runs without the standard libraries), and the returned table read back as JSON (layeh.com/gopher-json rules,
// then Argo CD's cleanReturnedObj for actions). lua5.1 is the dialect of Argo CD's gopher-lua; lua5.4 checks the
// scripts do not lean on 5.1-only behaviour.
import { execFileSync } from 'node:child_process';

/** argocd/resource_customizations/upgrade.apiserver.dev/ApiServerUpgrade */
export { DIR } from '../../argocd/argocd-cm.ts';

export const INTERPRETERS = ['lua5.1', 'lua5.4'] as const;
export type Interpreter = (typeof INTERPRETERS)[number];

/** The clock the actions see: 2026-01-01T00:00:00Z, the value action_test.yaml expects in the annotations. */
export const NOW = Date.UTC(2026, 0, 1) / 1000;

function which(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const installed = new Map<string, boolean>();
/** Whether `lua` is on PATH, or else why not and how to install it (a missing interpreter fails, never skips). */
export function missing(lua: Interpreter): string | undefined {
  if (!installed.has(lua)) installed.set(lua, which(lua));
  if (installed.get(lua)) return undefined;
  return `${lua} is not on PATH: install it with \`apt-get update && apt-get install -y ${lua}\` (as root, \`node scripts/setup.ts test\` does it)`;
}

/** A Lua string literal: JSON escapes are Lua escapes too, except \uXXXX (control characters only): Lua 5.1 spells those \ddd. */
function luaString(s: string): string {
  return JSON.stringify(s).replace(/\\u([0-9a-f]{4})/gi, (_m, h: string) => `\\${String(parseInt(h, 16)).padStart(3, '0')}`);
}

/** A JSON value as a Lua table constructor (what Argo CD hands the script as `obj`). */
export function toLua(v: unknown): string {
  if (v === null || v === undefined) return 'nil';
  if (typeof v === 'string') return luaString(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `{${v.map(toLua).join(', ')}}`;
  return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `[${luaString(k)}] = ${toLua(x)}`).join(', ')}}`;
}

// The harness around the script, in Lua that runs under 5.1 and 5.4. It keeps for itself what it needs before
// the sandbox takes the libraries away, and writes the script's result as JSON on stdout.
const HARNESS = String.raw`
local format, gsub, byte, floor, huge, real_date, real_time = string.format, string.gsub, string.byte, math.floor, math.huge, os.date, os.time
local file = assert(io.open(SCRIPT, "rb"))
local src = file:read("*a")
file:close()

local safe_os = {
  time = function(t) if t == nil then return NOW end return real_time(t) end,
  date = function(fmt, t) return real_date(fmt, t or NOW) end,
}
local env = { obj = OBJ, actionParams = {}, os = safe_os }
for _, name in ipairs({ "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget", "rawset", "select",
  "getmetatable", "setmetatable", "tonumber", "tostring", "type", "unpack", "xpcall" }) do
  env[name] = _G[name]
end
env.table = { concat = table.concat, insert = table.insert, remove = table.remove, sort = table.sort }
env.require = function(name)
  if name == "os" then return safe_os end
  error("module '" .. tostring(name) .. "' not found: Argo CD preloads only os (time and date)", 2)
end
env._G = env

local chunk, err
if setfenv then
  chunk, err = loadstring(src, "@" .. SCRIPT)
  if chunk then setfenv(chunk, env) end
else
  chunk, err = load(src, "@" .. SCRIPT, "t", env)
end
if not chunk then io.stderr:write(tostring(err), "\n") os.exit(2) end

-- ("x"):sub(1) needs the string library, which Argo CD does not open.
local string_meta = getmetatable("")
local string_index = string_meta.__index
string_meta.__index = nil
local ok, result = pcall(chunk)
string_meta.__index = string_index
if not ok then io.stderr:write(tostring(result), "\n") os.exit(3) end

local ESCAPES = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
local function escape(c) return ESCAPES[c] or format("\\u%04x", byte(c)) end

-- layeh.com/gopher-json: an empty table is [], a table with keys 1..n an array, one with string keys an object.
local function encode(v)
  local t = type(v)
  if t == "nil" then return "null" end
  if t == "boolean" then return tostring(v) end
  if t == "number" then
    if v ~= v or v == huge or v == -huge then error("cannot encode " .. tostring(v) .. " as JSON") end
    if v == floor(v) and v > -2^53 and v < 2^53 then return format("%d", v) end
    return format("%.17g", v)
  end
  if t == "string" then return '"' .. (gsub(v, '[%c"\\]', escape)) .. '"' end
  if t ~= "table" then error("cannot encode a " .. t .. " as JSON") end
  if next(v) == nil then return "[]" end
  local n, strings, keys = 0, 0, {}
  for k in pairs(v) do
    if type(k) == "string" then strings = strings + 1 keys[#keys + 1] = k else n = n + 1 end
  end
  if strings == 0 then
    local items = {}
    for i = 1, n do
      if v[i] == nil then error("a table with holes or non-integer keys cannot be encoded as JSON") end
      items[i] = encode(v[i])
    end
    return "[" .. table.concat(items, ",") .. "]"
  end
  if n > 0 then error("a table with both string and other keys cannot be encoded as JSON") end
  table.sort(keys)
  local items = {}
  for i, k in ipairs(keys) do items[i] = encode(k) .. ":" .. encode(v[k]) end
  return "{" .. table.concat(items, ",") .. "}"
end
io.write(encode(result))
`;

/** Runs one script with `obj` and returns what it returned, decoded from JSON. Throws with the interpreter's stderr. */
export function runLua(lua: Interpreter, script: string, obj: unknown): unknown {
  const chunk = `local SCRIPT = ${luaString(script)}\nlocal NOW = ${NOW}\nlocal OBJ = ${toLua(obj)}\n${HARNESS}`;
  let out: string;
  try {
    out = execFileSync(lua, ['-'], { input: chunk, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${lua} ${script}: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
  return JSON.parse(out) as unknown;
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Argo CD's cleanReturnedObj (util/lua/lua.go): Lua cannot tell an empty object from an empty array and the JSON
 * encoder picks the array, so an empty array where the original object had a map is a map again.
 */
export function cleanReturnedObj(newObj: Record<string, unknown>, obj: Record<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(obj)) {
    if (!(key in newObj)) continue;
    const n = newObj[key];
    const o = obj[key];
    if (isMap(n) && isMap(o)) newObj[key] = cleanReturnedObj(n, o);
    else if (Array.isArray(n) && isMap(o) && n.length === 0) newObj[key] = {};
    else if (Array.isArray(n) && Array.isArray(o)) newObj[key] = cleanReturnedArray(n, o);
  }
  return newObj;
}

function cleanReturnedArray(newArr: unknown[], arr: unknown[]): unknown[] {
  for (let i = 0; i < newArr.length && i < arr.length; i++) {
    const n = newArr[i];
    const o = arr[i];
    if (isMap(n) && isMap(o)) newArr[i] = cleanReturnedObj(n, o);
    else if (Array.isArray(n) && Array.isArray(o)) newArr[i] = cleanReturnedArray(n, o);
  }
  return newArr;
}

/** Argo CD's health states (gitops-engine pkg/health); any other status is "Lua returned an invalid health status". */
export const HEALTH_STATUSES = ['Unknown', 'Progressing', 'Suspended', 'Healthy', 'Degraded', 'Missing'] as const;

export interface HealthStatus {
  status: string;
  message: string;
}

/** health.lua's verdict, as Argo CD reads it. */
export function health(lua: Interpreter, script: string, obj: unknown): HealthStatus {
  const r = runLua(lua, script, obj);
  if (Array.isArray(r) && r.length === 0) return { status: '', message: '' };
  if (!isMap(r)) throw new Error(`expect table output from Lua script, not ${JSON.stringify(r)}`);
  const status = typeof r.status === 'string' ? r.status : '';
  if (!(HEALTH_STATUSES as readonly string[]).includes(status)) return { status: 'Unknown', message: 'Lua returned an invalid health status' };
  return { status, message: typeof r.message === 'string' ? r.message : '' };
}

/** appv1.ResourceAction, with Argo CD's zero values for what the script leaves out. */
export interface ResourceAction {
  name: string;
  disabled: boolean;
  iconClass: string;
  displayName: string;
}

export function normalizeAction(a: Partial<ResourceAction> & { name: string }): ResourceAction {
  return { name: a.name, disabled: a.disabled ?? false, iconClass: a.iconClass ?? '', displayName: a.displayName ?? '' };
}

/** discovery.lua's actions, as Argo CD's ExecuteResourceActionDiscovery reads them, sorted by name. */
export function discovery(lua: Interpreter, script: string, obj: unknown): ResourceAction[] {
  const r = runLua(lua, script, obj);
  if (Array.isArray(r) && r.length === 0) return [];
  if (!isMap(r)) throw new Error(`expect table output from Lua script, not ${JSON.stringify(r)}`);
  return Object.entries(r)
    .map(([name, v]) => {
      if (!isMap(v)) return normalizeAction({ name });
      const disabled = typeof v.disabled === 'boolean' ? v.disabled : false;
      const str = (x: unknown): string | undefined => (typeof x === 'string' ? x : undefined);
      return normalizeAction({ name, disabled, iconClass: str(v.iconClass), displayName: str(v.displayName) });
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** An action.lua's result: the modified object (an old-style action, which Argo CD applies as a merge patch). */
export function action(lua: Interpreter, script: string, obj: Record<string, unknown>): Record<string, unknown> {
  const r = runLua(lua, script, structuredClone(obj));
  if (!isMap(r)) throw new Error(`expected the action to return the modified object, got ${JSON.stringify(r)}`);
  return cleanReturnedObj(r, obj);
}
