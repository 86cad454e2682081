import type { RoutePlugin } from './platform/http/app.ts';
import { credentialRoutes } from './credentials/credentials.routes.ts';
import { cloudAccountRoutes } from './cloud-accounts/cloud-accounts.routes.ts';
import { defaultValueRoutes } from './default-values/default-values.routes.ts';
import { environmentRoutes } from './environments/environments.routes.ts';
import { executionEnvironmentRoutes } from './execution-environments/execution-environments.routes.ts';
import { healthRoutes } from './health/health.routes.ts';
import { membershipRoutes } from './memberships/memberships.routes.ts';
import { organizationRoutes } from './organizations/organizations.routes.ts';
import { pipelineRoutes } from './pipelines/pipelines.routes.ts';
import { projectRoutes } from './projects/projects.routes.ts';
import { runRoutes } from './runs/runs.routes.ts';
import { stepLogRoutes } from './runs/step-logs.routes.ts';
import { stackRoutes } from './stacks/stacks.routes.ts';
import { stateRoutes } from './opentofu/state.routes.ts';
import { stackVariableRoutes } from './stacks/stack-variables.routes.ts';
import { userRoutes } from './users/users.routes.ts';
import { codeSourceRoutes } from './code-sources/code-sources.routes.ts';
import { gitServerRoutes } from './git-servers/git-servers.routes.ts';
import { gitWebhookRoutes } from './git-webhooks/webhooks.routes.ts';
import { auditRoutes } from './audit/audit.routes.ts';
import { moduleCatalogueRoutes } from './modules/modules.routes.ts';
import { moduleGraphRoutes, moduleInstanceRoutes } from './modules/module-instances.routes.ts';
import { moduleRegistryRoutes } from './modules/registry.routes.ts';
import { deploymentRoutes } from './deployments/deployments.routes.ts';
import { cloudEventRoutes } from './deployments/cloud-events.routes.ts';
import { domainRoutes } from './domains/domains.routes.ts';
import { feedRoutes } from './feed/feed.routes.ts';
import { consoleRoutes } from './console/console.routes.tsx';

/** Every domain's routes, in one list: a route that is not registered here does not exist. */
export const ROUTES: RoutePlugin[] = [
  healthRoutes,
  credentialRoutes,
  organizationRoutes,
  membershipRoutes,
  userRoutes,
  pipelineRoutes,
  projectRoutes,
  environmentRoutes,
  cloudAccountRoutes,
  executionEnvironmentRoutes,
  defaultValueRoutes,
  stackRoutes,
  runRoutes,
  stepLogRoutes,
  codeSourceRoutes,
  gitServerRoutes,
  gitWebhookRoutes,
  stateRoutes,
  stackVariableRoutes,
  auditRoutes,
  moduleCatalogueRoutes,
  moduleInstanceRoutes,
  moduleGraphRoutes,
  moduleRegistryRoutes,
  deploymentRoutes,
  cloudEventRoutes,
  domainRoutes,
  feedRoutes,
  consoleRoutes,
];
