-- The report page's night: the published ranking's date, when it was published and with which model.
select
    max(publish_date) as publish_date,
    max(published_at) as published_at,
    max(model_version) as model_version
from gpu_cost_ranking;
