// Keeping a stack's state in Plinth whatever its code says. OpenTofu merges override files
// (`override.tf`, `*_override.tf`, and their `.tf.json`, `.tofu`, `.tofu.json` forms) in name order,
// the last one winning, so Plinth's own override cannot be sure to come last: a repository's
// `zz_override.tf.json` would point the backend, with the run credential, at the tenant's server.
// Three things close that: a repository override that declares a backend is refused by name before
// `init`; `init` is given Plinth's addresses on its command line (which beat every file, and which
// any backend but `http` refuses as unknown arguments); and what `init` recorded is read back and
// must name Plinth's addresses before anything else runs.

/** The override file every OpenTofu step writes: `terraform { backend "http" {} }`. */
export const BACKEND_OVERRIDE_FILE = 'plinth_backend_override.tf';
/** The override file that marks the stack's sensitive variables as sensitive in the code declaring them. */
export const SENSITIVE_OVERRIDE_FILE = 'plinth_sensitive_override.tf';

/**
 * Prints the repository's override files that declare a backend or a cloud block, one per line. In
 * native syntax a block's type cannot be escaped, so a word match finds it (a comment mentioning one
 * is refused too: the error names the file). JSON can spell a key with `\u` escapes, so a JSON override
 * holding any is refused as well.
 */
export const FIND_BACKEND_OVERRIDES = String.raw`hcl='(^|[^[:alnum:]_-])(backend[[:space:]]+["[:alpha:]]|cloud[[:space:]]*[{])'
json='"(backend|cloud)"|\\u'
for f in override.* *_override.*; do
  case "$f" in
    ${BACKEND_OVERRIDE_FILE}|${SENSITIVE_OVERRIDE_FILE}) continue ;;
    *.tf|*.tofu) re=$hcl ;;
    *.tf.json|*.tofu.json) re=$json ;;
    *) continue ;;
  esac
  [ -f "$f" ] && grep -qE -- "$re" "$f" && printf '%s\n' "$f"
done
exit 0`;

/** Writes Plinth's backend override (removing whatever the repository had under its name first). */
export const WRITE_BACKEND_OVERRIDE = `mkdir -p "$HOME/.plinth" && rm -f ${BACKEND_OVERRIDE_FILE} && printf 'terraform {\\n  backend "http" {}\\n}\\n' > ${BACKEND_OVERRIDE_FILE}`;

/**
 * Writes `variable "<name>" { sensitive = true }` for each name in $PLINTH_SENSITIVE_NAMES (one per line)
 * that a `.tf` or `.tofu` file of the working directory declares: OpenTofu then treats every value
 * derived from it as sensitive, and refuses a root output that shows one without `sensitive = true`.
 * An override of a variable the code does not declare would fail `init`, hence the check; names are
 * OpenTofu identifiers (letters, digits, `_`, `-`), so they are safe inside the pattern.
 */
export const WRITE_SENSITIVE_OVERRIDE = String.raw`rm -f ${SENSITIVE_OVERRIDE_FILE}
printf '%s\n' "$PLINTH_SENSITIVE_NAMES" | while IFS= read -r n; do
  [ -n "$n" ] || continue
  for f in *.tf *.tofu; do
    case "$f" in *_override.tf|*_override.tofu|override.tf|override.tofu) continue ;; esac
    [ -f "$f" ] && grep -qE "^[[:space:]]*variable[[:space:]]+\"?$n\"?[[:space:]]*[{]" -- "$f" && { printf 'variable "%s" {\n  sensitive = true\n}\n' "$n"; break; }
  done
  :
done > ${SENSITIVE_OVERRIDE_FILE}`;

/** `init`'s own flags: a fresh backend configuration (never one a repository's `.terraform` kept), at Plinth's addresses. */
export const INIT_BACKEND_FLAGS = '-reconfigure -backend-config="address=$TF_HTTP_ADDRESS" -backend-config="lock_address=$TF_HTTP_LOCK_ADDRESS" -backend-config="unlock_address=$TF_HTTP_UNLOCK_ADDRESS"';

/** Prints the backend configuration `init` recorded (OpenTofu's `.terraform/terraform.tfstate`). */
export const READ_RECORDED_BACKEND = 'cat .terraform/terraform.tfstate';

/** The override files a FIND_BACKEND_OVERRIDES run printed. */
export function overridesDeclaringBackend(stdout: Buffer | undefined): string[] {
  return (stdout ?? Buffer.alloc(0)).toString('utf8').split('\n').filter((line) => line.length > 0);
}

export interface PlinthBackend {
  address: string;
  lockAddress: string;
  unlockAddress: string;
}

/**
 * recordedBackendProblem says what is wrong with the backend `init` recorded, or undefined when it is
 * Plinth's `http` backend at exactly Plinth's addresses.
 */
export function recordedBackendProblem(recorded: Buffer | undefined, expected: PlinthBackend): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse((recorded ?? Buffer.alloc(0)).toString('utf8'));
  } catch {
    return 'init recorded no readable backend configuration';
  }
  const backend = (parsed as { backend?: { type?: unknown; config?: Record<string, unknown> } } | null)?.backend;
  if (!backend || backend.type !== 'http') return `init configured the ${typeof backend?.type === 'string' ? `"${backend.type}"` : 'wrong'} backend, not Plinth's http backend`;
  const config = backend.config ?? {};
  const wanted: [string, string][] = [['address', expected.address], ['lock_address', expected.lockAddress], ['unlock_address', expected.unlockAddress]];
  const wrong = wanted.filter(([key, value]) => config[key] !== value).map(([key]) => key);
  return wrong.length ? `init recorded another ${wrong.join(', ')} than Plinth's` : undefined;
}
