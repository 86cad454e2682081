// How Plinth reaches AWS on behalf of a cloud account (docs/deployments.md#aws): its own credentials,
// read once, from which it assumes each account's role; and where the clients send their requests.

export interface AwsConfig {
  /** PLINTH_AWS_ENDPOINT_URL: every AWS client's endpoint (a stand-in, a VPC endpoint); unset: AWS's own. */
  endpointUrl: string | undefined;
  /** AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); unset: the SDK's default chain (instance role, container, web identity, profile). */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
}

export function loadAwsConfig(env: NodeJS.ProcessEnv): AwsConfig {
  const endpointUrl = env.PLINTH_AWS_ENDPOINT_URL || undefined;
  if (endpointUrl !== undefined && !URL.canParse(endpointUrl)) throw new Error(`PLINTH_AWS_ENDPOINT_URL must be a URL, not "${endpointUrl}"`);
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  const sessionToken = env.AWS_SESSION_TOKEN;
  return {
    endpointUrl,
    credentials: accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } : undefined,
  };
}
