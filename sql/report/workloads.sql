-- The report page: each workload tonight's ranking prices, with what the ranking stored of it and how many
-- offers were ranked (each offer counted once: its cheapest cluster).
with cheapest as (
    select * from gpu_cost_ranking
    where cluster_choice = 'cheapest'
),

final as (
    select
        workload,
        any_value(workload_type) as workload_type,
        any_value(token_budget) as token_budget,            -- tokens
        any_value(deadline_hours) as deadline_hours,        -- h
        any_value(max_gpus) as max_gpus,
        any_value(run_precision) as run_precision,
        count(*) filter (where not_ranked_reason is null) as ranked_offers,
        count(*) filter (where not_ranked_reason is not null) as not_ranked_offers
    from cheapest
    group by workload
)

select * from final order by workload;
