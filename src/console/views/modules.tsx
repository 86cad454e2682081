// The module graph of an environment (a picture and a table of the same data) and a module instance's
// page with its deployments, their task resources and its domain events.

import { layoutDag, NODE_HEIGHT, NODE_WIDTH } from '../dag-layout.ts';
import { ShortId, StatusBadge, When } from './format.tsx';
import { CopyButtons } from './layout.tsx';

export interface ReferenceMessageView {
  field: string;
  producerInstanceId: string;
  refInputId: string;
  kind: string;
  message?: string;
}

export interface GraphNodeView {
  id: string;
  givenId: string;
  kind: 'INSTANCE' | 'EXTERNAL_INSTANCE';
  name: string;
  moduleType: string;
  version: string;
  environmentId: string;
  messages: ReferenceMessageView[];
}

export interface GraphEdgeView {
  id: string;
  source: string;
  target: string;
  consumedFields: string[];
  crossEnv: boolean;
  refInputId: string;
  messages: ReferenceMessageView[];
}

export interface ModuleGraphPageProps {
  orgPath: string;
  environment: { id: string; name: string };
  graph: { nodes: GraphNodeView[]; edges: GraphEdgeView[] };
}

const NAME_CHARS = 22;
const short = (text: string) => (text.length > NAME_CHARS ? `${text.slice(0, NAME_CHARS - 1)}…` : text);
const problemText = (m: ReferenceMessageView) => m.message ?? `${m.kind.replaceAll('_', ' ').toLowerCase()}: ${m.field} of ${m.producerInstanceId}`;

/** A graph larger than this is not drawn (a picture of it would not be read); its table holds it all. */
const MAX_DRAWN_NODES = 300;

/** Each node's incoming edges, by the consuming node's id. */
function edgesByTarget(edges: GraphEdgeView[]): Map<string, GraphEdgeView[]> {
  const byTarget = new Map<string, GraphEdgeView[]>();
  for (const edge of edges) {
    const list = byTarget.get(edge.target);
    if (list) list.push(edge);
    else byTarget.set(edge.target, [edge]);
  }
  return byTarget;
}

export function ModuleGraphPage({ orgPath, environment, graph }: ModuleGraphPageProps) {
  const instanceUrl = (id: string) => `${orgPath}/module-instances/${encodeURIComponent(id)}`;
  const names = new Map(graph.nodes.map((n) => [n.id, n.name]));
  const incoming = edgesByTarget(graph.edges);
  const broken = graph.edges.filter((e) => e.messages.length).length + graph.nodes.filter((n) => n.messages.length).length;
  return (
    <>
      <h1>
        Modules of {environment.name} <CopyButtons id={environment.id} what="environment" />
      </h1>
      <p class="muted">
        {graph.nodes.filter((n) => n.kind === 'INSTANCE').length} instances, {graph.edges.length} references
        {broken ? `, ${broken} with problems` : ''}. A dashed line comes from another environment; a red one is a reference with a problem.
      </p>
      {graph.nodes.length === 0 ? (
        <p>No module instances in this environment.</p>
      ) : graph.nodes.length > MAX_DRAWN_NODES ? (
        <p class="muted">Too many instances to draw ({graph.nodes.length}): the table below holds them all.</p>
      ) : (
        <ModuleGraphPicture graph={graph} incoming={incoming} />
      )}
      <h2>Instances and their references</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Instance</th>
            <th scope="col">Module</th>
            <th scope="col">Uses</th>
            <th scope="col">Problems</th>
          </tr>
        </thead>
        <tbody>
          {graph.nodes.map((node) => {
            const uses = incoming.get(node.id) ?? [];
            const problems = [...node.messages, ...uses.flatMap((e) => e.messages)];
            return (
              <tr key={node.id}>
                <td>
                  <a href={instanceUrl(node.id)}>{node.name}</a>
                  {node.kind === 'EXTERNAL_INSTANCE' && <span class="muted"> · another environment</span>}
                </td>
                <td>
                  <code>
                    {node.moduleType}@{node.version}
                  </code>
                </td>
                <td>
                  {uses.length ? (
                    <ul class="plain-list">
                      {uses.map((e) => (
                        <li key={e.id}>
                          <code>{e.consumedFields.join(', ')}</code> of {names.get(e.source) ?? e.source} (input <code>{e.refInputId}</code>)
                          {e.crossEnv && <span class="muted"> · across environments</span>}
                        </li>
                      ))}
                    </ul>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
                <td>
                  {problems.length ? (
                    <ul class="plain-list problem">
                      {problems.map((m) => (
                        <li key={`${m.refInputId}:${m.field}:${m.producerInstanceId}`}>{problemText(m)}</li>
                      ))}
                    </ul>
                  ) : (
                    <span class="muted">none</span>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </>
  );
}

function ModuleGraphPicture({ graph, incoming }: { graph: ModuleGraphPageProps['graph']; incoming: Map<string, GraphEdgeView[]> }) {
  const layout = layoutDag(graph.nodes.map((n) => ({ id: n.id, needs: (incoming.get(n.id) ?? []).map((e) => e.source) })));
  const nodes = new Map(graph.nodes.map((n) => [n.id, n]));
  const edgeClass = (from: string, to: string) => {
    const edges = (incoming.get(to) ?? []).filter((e) => e.source === from);
    return ['edge', edges.some((e) => e.crossEnv) ? 'cross-env' : '', edges.some((e) => e.messages.length) ? 'broken' : ''].filter(Boolean).join(' ');
  };
  return (
    <figure class="dag">
      <svg width={layout.width} height={layout.height} viewBox={`0 0 ${layout.width} ${layout.height}`} role="img" aria-labelledby="graph-caption">
        <title>The environment's module instances and their references</title>
        {layout.edges.map((edge) => (
          <path key={`${edge.from}>${edge.to}`} class={edgeClass(edge.from, edge.to)} d={edge.path} />
        ))}
        {layout.nodes.map((placed) => {
          const node = nodes.get(placed.id)!;
          const troubled = node.messages.length > 0 || (incoming.get(node.id) ?? []).some((e) => e.messages.length);
          return (
            <g
              key={node.id}
              class={`node module ${node.kind === 'EXTERNAL_INSTANCE' ? 'external' : ''} ${troubled ? 'broken' : ''}`}
              transform={`translate(${placed.x},${placed.y})`}
            >
              <title>{`${node.name} (${node.moduleType}@${node.version})${troubled ? ': a reference has a problem' : ''}`}</title>
              <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx="6" />
              <text class="name" x="10" y="18">
                {short(node.name)}
              </text>
              <text class="state" x="10" y="35">
                {short(`${node.moduleType}@${node.version}`)}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption id="graph-caption" class="muted">
        The table below holds the same instances and references, with each problem's message.
      </figcaption>
    </figure>
  );
}

export interface ModuleInstanceView {
  id: string;
  name: string;
  givenId: string;
  moduleType: string;
  version: string;
  environmentId: string;
  stackId: string;
  appliedAt?: string;
}

export interface DeploymentView {
  id: string;
  deploymentType: string;
  status: string;
  description: string;
  triggerSource: string;
  createdAt: string;
  updatedAt?: string;
  completedAt?: string;
  pipelineRunId?: string;
  redeployOfDeploymentId?: string;
  rollbackToDeploymentId?: string;
}

export interface TaskResourceView {
  id: string;
  externalId: string;
  lastStatus?: string;
  data: { desiredStatus?: string; availabilityZone?: string; launchType?: string; stoppedReason?: string; taskDefinitionRevision?: number };
  lastEventAt: string;
}

export interface DomainEventView {
  id: string;
  kind: string;
  createdAt: string;
  data: string;
}

export interface ModuleInstancePageProps {
  orgPath: string;
  instance: ModuleInstanceView;
  environmentName?: string;
  deployments: DeploymentView[];
  /** The task resources of the newest deployment. */
  resources: TaskResourceView[];
  domainEvents: DomainEventView[];
  /** The stream that sends the deployments, tasks and events again whenever they change. */
  liveUrl?: string;
}

export function ModuleInstancePage({ orgPath, instance, environmentName, liveUrl, ...activity }: ModuleInstancePageProps) {
  return (
    <>
      <h1>
        {instance.name} <CopyButtons id={instance.id} what="module instance" />
      </h1>
      <dl class="facts">
        <dt>Module</dt>
        <dd>
          <code>
            {instance.moduleType}@{instance.version}
          </code>
        </dd>
        <dt>Environment</dt>
        <dd>
          <a href={`${orgPath}/environments/${encodeURIComponent(instance.environmentId)}/modules`}>{environmentName ?? instance.environmentId}</a>
        </dd>
        <dt>Stack</dt>
        <dd>
          <a href={`${orgPath}/stacks/${encodeURIComponent(instance.stackId)}`}>its stack</a>
        </dd>
        <dt>Applied</dt>
        <dd>
          <When at={instance.appliedAt} />
        </dd>
      </dl>
      {liveUrl ? (
        <div hx-ext="sse" sse-connect={liveUrl} sse-swap="activity" sse-close="done" aria-live="polite">
          <InstanceActivity orgPath={orgPath} {...activity} />
        </div>
      ) : (
        <InstanceActivity orgPath={orgPath} {...activity} />
      )}
    </>
  );
}

export type InstanceActivityProps = Pick<ModuleInstancePageProps, 'orgPath' | 'deployments' | 'resources' | 'domainEvents'>;

/** An instance's deployments, the newest one's tasks, and its domain events: the part of its page that follows them live. */
export function InstanceActivity({ orgPath, deployments, resources, domainEvents }: InstanceActivityProps) {
  return (
    <>
      <h2>Deployments</h2>
      {deployments.length === 0 ? (
        <p class="muted">None yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Deployment</th>
              <th scope="col">Type</th>
              <th scope="col">Status</th>
              <th scope="col">What</th>
              <th scope="col">Started</th>
            </tr>
          </thead>
          <tbody>
            {deployments.map((d) => (
              <tr key={d.id}>
                <td>
                  <ShortId id={d.id} />
                  {d.pipelineRunId && (
                    <>
                      {' '}
                      · <a href={`${orgPath}/runs/${encodeURIComponent(d.pipelineRunId)}`}>its run</a>
                    </>
                  )}
                </td>
                <td>
                  <code>{d.deploymentType}</code>
                </td>
                <td>
                  <StatusBadge status={d.status} />
                </td>
                <td>
                  {d.description || <span class="muted">{d.triggerSource.toLowerCase()}</span>}
                  {d.redeployOfDeploymentId && <span class="muted"> · redeploy</span>}
                  {d.rollbackToDeploymentId && <span class="muted"> · rollback</span>}
                </td>
                <td>
                  <When at={d.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {resources.length > 0 && (
        <>
          <h2>Tasks of the newest deployment</h2>
          <table>
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">Status</th>
                <th scope="col">Desired</th>
                <th scope="col">Where</th>
                <th scope="col">Stopped because</th>
                <th scope="col">Last event</th>
              </tr>
            </thead>
            <tbody>
              {resources.map((r) => (
                <tr key={r.id}>
                  <td>
                    <code title={r.externalId}>{r.externalId.split('/').pop()}</code>
                  </td>
                  <td>{r.lastStatus ?? '—'}</td>
                  <td>{r.data.desiredStatus ?? '—'}</td>
                  <td>{[r.data.launchType, r.data.availabilityZone].filter(Boolean).join(' · ') || '—'}</td>
                  <td>{r.data.stoppedReason ?? <span class="muted">—</span>}</td>
                  <td>
                    <When at={r.lastEventAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <h2>Domain and certificate events</h2>
      {domainEvents.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Event</th>
              <th scope="col">Data</th>
            </tr>
          </thead>
          <tbody>
            {domainEvents.map((e) => (
              <tr key={e.id}>
                <td>
                  <When at={e.createdAt} />
                </td>
                <td>
                  <code>{e.kind}</code>
                </td>
                <td>
                  <code>{e.data}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
