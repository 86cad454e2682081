// Deleting a record asks the reader to type what names it: the route compares it (forms.ts confirmTyped),
// so a slip of the mouse deletes nothing, and no script is needed.

import { CsrfForm } from './layout.tsx';
import { FormError } from './stacks.tsx';

export interface ConfirmDeleteProps {
  action: string;
  csrfToken: string;
  /** The field's id, unique on the page. */
  id: string;
  /** The record in words, e.g. "the environment Prod". */
  what: string;
  /** What to type: the record's id or name. */
  expected: string;
  error?: { message: string; details?: string[] };
  /** What the reader typed, on a refused form. */
  typed?: string;
}

export function ConfirmDelete({ action, csrfToken, id, what, expected, error, typed }: ConfirmDeleteProps) {
  return (
    <CsrfForm action={action} csrfToken={csrfToken}>
      <FormError error={error} />
      <label for={id}>
        To delete {what}, type <code>{expected}</code>
      </label>
      <input id={id} type="text" name="confirm" required maxLength={255} autocomplete="off" value={typed ?? ''} />
      <button type="submit" class="danger">
        Delete {what}
      </button>
    </CsrfForm>
  );
}
