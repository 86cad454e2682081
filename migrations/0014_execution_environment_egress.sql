-- What the steps of an execution environment may reach, narrowing the installation's egress policy:
-- null narrows nothing; a list (CIDRs and host names, as PLINTH_STEP_EGRESS_ALLOW) lets a step reach
-- only what both the policy and the list allow (docs/sandbox.md).
alter table execution_environments add column egress_allow text[];
