// Keeping a stack's state in Plinth whatever its code says. OpenTofu merges override files
// (`override.tf`, `*_override.tf`, and their `.tf.json`, `.tofu`, `.tofu.json` forms) in name order,
// the last one winning, so Plinth's own override cannot be sure to come last: a repository's
// `zz_override.tf.json` would point the backend, with the run credential, at the tenant's server.
// Three things close that: a repository override that declares a backend is refused by name before
// `init`; `init` is given Plinth's addresses on its command line (which beat every file, and which
// any backend but `http` refuses as unknown arguments); and what `init` recorded is read back and
// must name Plinth's addresses before anything else runs.

/**
 * The override files every OpenTofu step writes, each under both extensions: OpenTofu 1.8 and later read
 * `x.tofu` and ignore `x.tf` beside it (so a repository's `plinth_backend_override.tofu` would otherwise
 * hide Plinth's `.tf`), and earlier versions read only `.tf`.
 */
export const BACKEND_OVERRIDE = 'plinth_backend_override';
/** Marks the stack's sensitive variables as sensitive in the code declaring them. */
export const SENSITIVE_OVERRIDE = 'plinth_sensitive_override';

/**
 * Prints the repository's override files that declare a backend or a cloud block, or are symbolic links
 * (whose target could change under the check), one per line. Any mention of the words counts: a block's
 * type cannot be escaped in native syntax, and a comment naming one is refused too (the error names the
 * file). JSON can spell a key with `\u` escapes, so a JSON override holding any is refused as well.
 */
export const FIND_BACKEND_OVERRIDES = String.raw`word='(^|[^[:alnum:]_-])(backend|cloud)([^[:alnum:]_-]|$)'
for f in override.* *_override.*; do
  case "$f" in
    ${BACKEND_OVERRIDE}.tf|${BACKEND_OVERRIDE}.tofu|${SENSITIVE_OVERRIDE}.tf|${SENSITIVE_OVERRIDE}.tofu) continue ;;
    *.tf|*.tofu) re=$word ;;
    *.tf.json|*.tofu.json) re="$word|\\\\u" ;;
    *) continue ;;
  esac
  if [ -L "$f" ]; then printf '%s\n' "$f"; elif [ -f "$f" ] && grep -qE -- "$re" "$f"; then printf '%s\n' "$f"; fi
done
exit 0`;

/** Writes Plinth's backend override (removing whatever the repository had under its names first). */
export const WRITE_BACKEND_OVERRIDE = [
  'mkdir -p "$HOME/.plinth"',
  `rm -f ${BACKEND_OVERRIDE}.tf ${BACKEND_OVERRIDE}.tofu`,
  `printf 'terraform {\\n  backend "http" {}\\n}\\n' > ${BACKEND_OVERRIDE}.tf`,
  `cp ${BACKEND_OVERRIDE}.tf ${BACKEND_OVERRIDE}.tofu`,
].join(' && ');

/**
 * Writes `variable "<name>" { sensitive = true }` for each name in $PLINTH_SENSITIVE_NAMES (one per line)
 * that a `.tf` or `.tofu` file of the working directory declares (a `.tf` file OpenTofu ignores for its
 * `.tofu` twin does not count): OpenTofu then treats every value derived from it as sensitive, and
 * refuses a root output that shows one without `sensitive = true`. An override of a variable the code
 * does not declare would fail `init`, hence the check; names are OpenTofu identifiers (letters, digits,
 * `_`, `-`), so they are safe inside the pattern.
 */
export const WRITE_SENSITIVE_OVERRIDE = String.raw`rm -f ${SENSITIVE_OVERRIDE}.tf ${SENSITIVE_OVERRIDE}.tofu
printf '%s\n' "$PLINTH_SENSITIVE_NAMES" | while IFS= read -r n; do
  [ -n "$n" ] || continue
  for f in *.tf *.tofu; do
    case "$f" in *_override.tf|*_override.tofu|override.tf|override.tofu) continue ;; esac
    case "$f" in *.tf) [ -e "${'$'}{f%.tf}.tofu" ] && continue ;; esac
    [ -f "$f" ] && grep -qE "^[[:space:]]*variable[[:space:]]+\"?$n\"?[[:space:]]*[{]" -- "$f" && { printf 'variable "%s" {\n  sensitive = true\n}\n' "$n"; break; }
  done
  :
done > ${SENSITIVE_OVERRIDE}.tf && cp ${SENSITIVE_OVERRIDE}.tf ${SENSITIVE_OVERRIDE}.tofu`;

/** `init`'s own flags: a fresh backend configuration (never one a repository's `.terraform` kept), at Plinth's addresses. */
export const INIT_BACKEND_FLAGS =
  '-reconfigure -backend-config="address=$TF_HTTP_ADDRESS" -backend-config="lock_address=$TF_HTTP_LOCK_ADDRESS" -backend-config="unlock_address=$TF_HTTP_UNLOCK_ADDRESS"';

/** Prints the backend configuration `init` recorded (OpenTofu's `.terraform/terraform.tfstate`). */
export const READ_RECORDED_BACKEND = 'cat .terraform/terraform.tfstate';

/** The override files a FIND_BACKEND_OVERRIDES run printed. */
export function overridesDeclaringBackend(stdout: Buffer | undefined): string[] {
  return (stdout ?? Buffer.alloc(0))
    .toString('utf8')
    .split('\n')
    .filter((line) => line.length > 0);
}

export interface PlinthBackend {
  address: string;
  lockAddress: string;
  unlockAddress: string;
}

/**
 * recordedBackendProblem says what is wrong with the backend `init` recorded, or undefined when it is
 * Plinth's `http` backend at exactly Plinth's addresses with nothing else set in files: the credential
 * and the rest come from the TF_HTTP_* variables, and a setting a file could add (`headers`,
 * `skip_cert_verification`, a client certificate, `password`) has no business there.
 */
export function recordedBackendProblem(recorded: Buffer | undefined, expected: PlinthBackend): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse((recorded ?? Buffer.alloc(0)).toString('utf8'));
  } catch {
    return 'init recorded no readable backend configuration';
  }
  const backend = (parsed as { backend?: { type?: unknown; config?: Record<string, unknown> } } | null)?.backend;
  if (backend?.type !== 'http')
    return `init configured the ${typeof backend?.type === 'string' ? `"${backend.type}"` : 'wrong'} backend, not Plinth's http backend`;
  const config = backend.config ?? {};
  const wanted: Record<string, string> = { address: expected.address, lock_address: expected.lockAddress, unlock_address: expected.unlockAddress };
  const wrong = Object.keys(wanted).filter((key) => config[key] !== wanted[key]);
  if (wrong.length) return `init recorded another ${wrong.join(', ')} than Plinth's`;
  const extra = Object.keys(config).filter((key) => !(key in wanted) && config[key] !== null && config[key] !== undefined);
  return extra.length ? `the code sets ${extra.sort().join(', ')} on Plinth's backend` : undefined;
}
