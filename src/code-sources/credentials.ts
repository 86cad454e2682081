import type { Db } from '../platform/db/db.ts';
import type { GitConfig } from '../platform/git-config.ts';
import { AppError } from '../platform/errors.ts';
import type { SecretBox } from '../platform/secrets/secret-box.ts';
import { tokenUsername } from '../git-servers/git-credentials.ts';
import { installationToken } from '../git-servers/git-app.service.ts';
import { findAppInstallation } from '../git-servers/git-servers.repo.ts';
import { oauthAccessToken } from '../git-servers/git-oauth.service.ts';
import type { CodeSourceRow } from './code-sources.repo.ts';
import type { GitCredential } from './git-remote.ts';

export const tokenContext = (id: string) => `code_sources.token:${id}`;
export const webhookSecretContext = (id: string) => `code_sources.webhook_secret:${id}`;

/**
 * gitCredential opens (or mints, or refreshes) what a fetch of the source needs: its token, an OAuth
 * token of its self-hosted server (refreshed when expired), or an installation token of the Git app.
 * The result goes only into a git process's environment (git-remote.ts).
 */
export async function gitCredential(db: Db, secrets: SecretBox, git: GitConfig, source: CodeSourceRow): Promise<GitCredential | null> {
  switch (source.auth_type) {
    case 'NONE':
      return null;
    case 'TOKEN':
      if (!source.token_sealed) throw new AppError(422, 'Git:Credential:MISSING', 'The code source authenticates with a token but has none');
      return { username: tokenUsername(source.provider, 'TOKEN'), password: secrets.open(source.token_sealed, tokenContext(source.id)) };
    case 'OAUTH': {
      const { token } = await oauthAccessToken(db, secrets, git, source.organization_id, source.git_self_hosted_server_id ?? '');
      return { username: tokenUsername(source.provider, 'OAUTH'), password: token };
    }
    case 'APP_INSTALLATION': {
      const installation = await findAppInstallation(db, source.organization_id, source.git_app_installation_id ?? '');
      if (!installation) throw new AppError(422, 'Git:App:NO_INSTALLATION', "The code source's Git app installation no longer exists");
      return { username: tokenUsername(source.provider, 'APP_INSTALLATION'), password: await installationToken(git, installation.installation_id) };
    }
  }
}
