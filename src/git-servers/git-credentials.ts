import type { GitProvider } from '../platform/db/enums.ts';

/**
 * The user name each provider expects beside a token in HTTP Basic authentication (the token is the
 * password): GitHub's installation and OAuth tokens, GitLab's and Gitea's OAuth tokens, Bitbucket's.
 */
export function tokenUsername(provider: GitProvider, kind: 'TOKEN' | 'OAUTH' | 'APP_INSTALLATION'): string {
  switch (provider) {
    case 'GITHUB':
      return 'x-access-token';
    case 'GITLAB':
      return kind === 'OAUTH' ? 'oauth2' : 'plinth';
    case 'BITBUCKET':
      return 'x-token-auth';
    case 'GITEA':
    case 'GENERIC':
      return kind === 'OAUTH' ? 'oauth2' : 'plinth';
  }
}
