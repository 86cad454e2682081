import type { RoutePlugin } from './platform/http/app.ts';
import { credentialRoutes } from './credentials/credentials.routes.ts';
import { healthRoutes } from './health/health.routes.ts';
import { membershipRoutes } from './memberships/memberships.routes.ts';
import { organizationRoutes } from './organizations/organizations.routes.ts';
import { pipelineRoutes } from './pipelines/pipelines.routes.ts';
import { userRoutes } from './users/users.routes.ts';

/** Every domain's routes, in one list: a route that is not registered here does not exist. */
export const ROUTES: RoutePlugin[] = [healthRoutes, credentialRoutes, organizationRoutes, membershipRoutes, userRoutes, pipelineRoutes];
