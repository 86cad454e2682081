-- The lists' name and givenId filters (people and the CLI find records by what they call them): each
-- served by an index in the list's own order, so a name that matches nothing costs a lookup, not a walk
-- of the organization's rows.
create index projects_org_name_idx on projects (organization_id, name, id);
create index environments_org_name_idx on environments (organization_id, name, id);
create index environments_org_given_id_idx on environments (organization_id, given_id, id);
create index stacks_org_name_idx on stacks (organization_id, name, id);
create index pipelines_org_name_idx on pipelines (organization_id, name, id);
create index code_sources_org_name_idx on code_sources (organization_id, name, id);
