-- One batch of offers' ranked choices (ranking_picked.sql) into ranking_keys (create_ranking_keys.sql).
insert into ranking_keys
with picked as (
    select workload, cluster_choice, expected_total_usd, expected_hours, ranked from ranking_picked
),

final as (
    select workload, cluster_choice, expected_total_usd, expected_hours from picked where ranked
)

select * from final;
