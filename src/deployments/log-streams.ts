// Where a container task's logs are: the awslogs options of its task definition's containers, and the
// stream name ECS gives each container of a task (`<prefix>/<container>/<task id>`). Pure.

export interface LogStream {
  containerName: string;
  logGroupName: string;
  logStreamPrefix: string;
  region: string;
  streamName: string;
}

/** logStreamsOf lists the CloudWatch Logs streams of a task of the definition (its containers that log with awslogs and a stream prefix). */
export function logStreamsOf(definition: Record<string, unknown> | undefined, taskArn: string, defaultRegion: string): LogStream[] {
  const containers = Array.isArray(definition?.containerDefinitions) ? definition.containerDefinitions : [];
  const taskId = taskArn.slice(taskArn.lastIndexOf('/') + 1);
  const streams: LogStream[] = [];
  for (const container of containers as { name?: unknown; logConfiguration?: { logDriver?: unknown; options?: Record<string, unknown> } }[]) {
    const options = container?.logConfiguration?.options;
    if (container?.logConfiguration?.logDriver !== 'awslogs' || !options || typeof container.name !== 'string') continue;
    const group = options['awslogs-group'];
    const prefix = options['awslogs-stream-prefix'];
    if (typeof group !== 'string' || typeof prefix !== 'string') continue;
    const region = typeof options['awslogs-region'] === 'string' ? options['awslogs-region'] : defaultRegion;
    streams.push({ containerName: container.name, logGroupName: group, logStreamPrefix: prefix, region, streamName: `${prefix}/${container.name}/${taskId}` });
  }
  return streams;
}
