import { ForbiddenError } from '../errors.ts';

/** Organization roles, weakest first: each role may do everything the ones before it may. */
export const ROLES = ['VIEWER', 'MEMBER', 'ADMIN', 'OWNER'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The role matrix: every permission a route can require, the weakest role that holds it, and what it
 * covers. This one table drives the checks and docs/roles.md (`npm run docs:roles` writes it).
 * A super-administrator acts as OWNER in every organization.
 */
export const PERMISSIONS = {
  read: { minRole: 'VIEWER', covers: 'read anything in the organization' },
  'project:write': { minRole: 'MEMBER', covers: 'create, change and delete projects' },
  'environment:write': { minRole: 'MEMBER', covers: 'create, change and delete environments' },
  'stack:write': { minRole: 'MEMBER', covers: 'create, change and delete stacks' },
  'pipeline:write': { minRole: 'MEMBER', covers: 'create pipelines and pipeline versions, delete pipelines' },
  'module:write': { minRole: 'MEMBER', covers: 'module definitions, versions, instances and deploys' },
  'default-value:write': { minRole: 'MEMBER', covers: 'default-value definitions and default values' },
  'run:operate': { minRole: 'MEMBER', covers: 'trigger, approve, reject, cancel and retry runs; redeploy' },
  'membership:manage': { minRole: 'ADMIN', covers: 'invite, change and remove members (not OWNER ones)' },
  'service-account:manage': { minRole: 'ADMIN', covers: 'service accounts and their API keys' },
  'code-source:manage': { minRole: 'ADMIN', covers: 'code sources and Git connections' },
  'cloud-account:manage': { minRole: 'ADMIN', covers: 'cloud accounts' },
  'execution-environment:manage': { minRole: 'ADMIN', covers: 'execution environments' },
  'state:read': {
    minRole: 'MEMBER',
    covers:
      "read a stack's OpenTofu state (it holds secrets): the backend's GET, a state version's `state`, and its plans (a plan step's attribute values, the log of a plan or destroy step)",
  },
  'state:force-unlock': { minRole: 'ADMIN', covers: "force-unlock a stack's OpenTofu state" },
  'audit:read': { minRole: 'ADMIN', covers: 'read and export the audit log, its settings and webhook deliveries' },
  'organization:manage': { minRole: 'OWNER', covers: 'PATCH the organization, grant or remove OWNER, audit retention and webhook' },
} as const satisfies Record<string, { minRole: Role; covers: string }>;

export type Permission = keyof typeof PERMISSIONS;

export function roleAtLeast(role: Role, minimum: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(minimum);
}

export function hasPermission(role: Role, permission: Permission): boolean {
  return roleAtLeast(role, PERMISSIONS[permission].minRole);
}

/** Throws 403 unless the role holds the permission. */
export function assertPermission(role: Role, permission: Permission): void {
  if (!hasPermission(role, permission)) {
    throw new ForbiddenError(`This needs the ${PERMISSIONS[permission].minRole} role or higher (${permission})`, 'Auth:Permission:DENIED', {
      permission,
      requiredRole: PERMISSIONS[permission].minRole,
      role,
    });
  }
}

/** renderRoleMatrix writes the matrix as the Markdown table kept in docs/roles.md. */
export function renderRoleMatrix(): string {
  const header = `| permission | covers | ${ROLES.join(' | ')} |\n|---|---|${ROLES.map(() => '---').join('|')}|\n`;
  const rows = Object.entries(PERMISSIONS).map(([name, p]) => {
    const cells = ROLES.map((r) => (roleAtLeast(r, p.minRole) ? 'yes' : '-'));
    return `| \`${name}\` | ${p.covers} | ${cells.join(' | ')} |`;
  });
  return header + rows.join('\n') + '\n';
}
