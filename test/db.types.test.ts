import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import pg from 'pg';
import { DATABASE_TYPES_FILE, renderDatabaseTypes, withMigratedDatabase } from '../scripts/db-types.ts';

function serverUrl(): string {
  const url = process.env.PLINTH_TEST_DATABASE_URL;
  if (!url) throw new Error('Run the tests with `npm test`: it prepares the test database server');
  return url;
}

async function execute(url: string, statement: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

describe('the generated Database interface', () => {
  it('is what `npm run db:types` generates from the migrations (run it after adding a migration)', async () => {
    const rendered = await withMigratedDatabase(serverUrl(), renderDatabaseTypes);
    assert.equal(readFileSync(DATABASE_TYPES_FILE, 'utf8'), rendered);
  });

  it('types check-constrained columns by their TypeScript list, and refuses to generate when the two disagree', async () => {
    const rendered = await withMigratedDatabase(serverUrl(), renderDatabaseTypes);
    assert.match(rendered, /^ {2}status: RunStatus;$/m);
    assert.match(rendered, /^ {2}action: RunAction \| null;$/m);
    assert.match(rendered, /^ {2}type: Generated<StackType>;$/m);
    await assert.rejects(
      withMigratedDatabase(serverUrl(), async (url) => {
        await execute(url, `alter table stacks add constraint stacks_type_check check (type in ('OPENTOFU', 'TERRAFORM'))`);
        return renderDatabaseTypes(url);
      }),
      /stacks\.type: SQL allows OPENTOFU, TERRAFORM, StackType lists OPENTOFU/,
    );
    await assert.rejects(
      withMigratedDatabase(serverUrl(), async (url) => {
        await execute(url, `alter table step_executions add constraint step_type_check check (step_type in ('script', 'approval'))`);
        return renderDatabaseTypes(url);
      }),
      /step_executions\.step_type: has a check constraint \(script, approval\) but no entry in ENUM_COLUMNS/,
    );
  });
});
