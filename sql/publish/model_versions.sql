-- Registered versions of the token-efficiency model (read from MLflow by tasks/publishing/model_versions.py).
create table published.model_versions as
with final as (
    select * from publish_model_versions
)

select * from final order by try_cast(version as integer) desc nulls last;
