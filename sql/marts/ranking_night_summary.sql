-- Offers of one night by why they are not ranked (null = ranked), counted once per offer (its cheapest
-- choice). Reasons that name numbers are grouped by their first clause so the summary stays short.
select
    case when not_ranked_reason is null then null
        else split_part(not_ranked_reason, ':', 1)
    end as reason,
    count(*) as offers
from marts.gpu_cost_ranking_history
where publish_date = $publish_date and cluster_choice = 'cheapest'
group by all
order by offers desc;
