// The fixed sets of values commands take, shared by the commands that parse them and the completion
// that offers them.

export const RUN_STATUSES = ['QUEUED', 'RUNNING', 'WAITING_FOR_APPROVAL', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const MODULE_DEFINITION_STATUSES = ['DRAFT', 'ACTIVE'] as const;
