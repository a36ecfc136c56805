-- The report page: the registered model versions, the champion first.
select version, aliases, is_champion, status, run_id, created_at, metrics
from model_versions
order by is_champion desc, try_cast(version as integer) desc nulls last;
