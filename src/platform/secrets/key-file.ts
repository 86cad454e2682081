import fs from 'node:fs';
import path from 'node:path';
import { generateSecretKeyText, parseSecretKey, SecretBox } from './secret-box.ts';

export interface SecretKeySettings {
  /** PLINTH_SECRET_KEY: the key that seals; when unset, the key file in the data directory. */
  secretKey: string | undefined;
  /** PLINTH_SECRET_KEY_PREVIOUS: comma-separated keys that still open what they sealed (rotation). */
  previousSecretKeys: string[];
  dataDir: string;
}

/**
 * openSecretBox builds the box from the configured key, or from `<dataDir>/secret-key`, generated with
 * mode 0600 on first use so that a single-machine installation needs no setup. Every process of one
 * installation must use the same key: with several machines, set PLINTH_SECRET_KEY on each.
 */
export function openSecretBox(settings: SecretKeySettings): SecretBox {
  return boxOf(settings, readOrCreateKeyFile);
}

/**
 * openExistingSecretBox builds the box from the configured key or the key file, and never makes a key:
 * for work that must use the key the installation's servers have, where another key would do lasting
 * harm (audit chains anchored with a key no server has stay broken). It throws, naming `purpose`, when
 * there is none.
 */
export function openExistingSecretBox(settings: SecretKeySettings, purpose: string): SecretBox {
  return boxOf(settings, (file) => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      throw new Error(
        `${purpose} needs the installation's secret key, and none is set: give this command the PLINTH_SECRET_KEY the servers use (or the PLINTH_DATA_DIR holding their secret-key file); no key was made`,
      );
    }
  });
}

function boxOf(settings: SecretKeySettings, readKeyFile: (file: string) => string): SecretBox {
  const previous = settings.previousSecretKeys.map((text, i) => parseSecretKey(text, `PLINTH_SECRET_KEY_PREVIOUS[${i}]`));
  if (settings.secretKey) return new SecretBox(parseSecretKey(settings.secretKey, 'PLINTH_SECRET_KEY'), previous);
  const file = path.join(settings.dataDir, 'secret-key');
  return new SecretBox(parseSecretKey(readKeyFile(file), file), previous);
}

function readOrCreateKeyFile(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // Written whole under another name, then linked into place: of two processes starting at once, one
  // key wins and neither can read a half-written file.
  const draft = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(draft, generateSecretKeyText() + '\n', { mode: 0o600 });
  try {
    fs.linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    fs.unlinkSync(draft);
  }
  return fs.readFileSync(file, 'utf8');
}
