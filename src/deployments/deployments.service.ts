import type { Principal } from '../platform/auth/principal.ts';
import type { Db } from '../platform/db/db.ts';
import { NotFoundError } from '../platform/errors.ts';
import { toPage, type PageRequest } from '../platform/pagination.ts';
import {
  findDeployment,
  findDeploymentsPage,
  findOrganizationResourcesPage,
  findResource,
  findResourcesPage,
  rowToDeployment,
  rowToResource,
} from './deployments.repo.ts';
import type { DeploymentListQuery } from './deployments.schema.ts';

export async function listDeployments(db: Db, principal: Principal, page: PageRequest, filter: DeploymentListQuery) {
  const { items, meta } = toPage(await findDeploymentsPage(db, principal.organizationId, page, filter), page, (r) => r.id);
  return { items: items.map(rowToDeployment), meta };
}

export async function getDeploymentRow(db: Db, principal: Principal, id: string) {
  const row = await findDeployment(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('Deployment', id);
  return row;
}

export async function getDeployment(db: Db, principal: Principal, id: string) {
  return rowToDeployment(await getDeploymentRow(db, principal, id));
}

export async function listDeploymentResources(db: Db, principal: Principal, deploymentId: string, page: PageRequest) {
  const deployment = await getDeploymentRow(db, principal, deploymentId);
  const { items, meta } = toPage(await findResourcesPage(db, deployment.id, page), page, (r) => r.id);
  return { items: items.map(rowToResource), meta };
}

export async function listOrganizationResources(db: Db, principal: Principal, page: PageRequest, filter: { deploymentId?: string; moduleInstanceId?: string }) {
  const { items, meta } = toPage(await findOrganizationResourcesPage(db, principal.organizationId, page, filter), page, (r) => r.id);
  return { items: items.map(rowToResource), meta };
}

export async function getDeploymentResource(db: Db, principal: Principal, id: string) {
  const row = await findResource(db, principal.organizationId, id);
  if (!row) throw new NotFoundError('DeploymentResource', id);
  return rowToResource(row);
}
