-- Skipped AWS offer lines per reason (view offer_classified: sql/prices/aws_offer_classified.sql).
with skipped as (
    select skip_reason from offer_classified where skip_reason is not null
),

final as (
    select skip_reason, count(*) as records
    from skipped
    group by skip_reason
)

select * from final order by skip_reason
