-- Rows of one night by why they are not ranked (null = ranked). Reasons that name numbers are grouped
-- by their first clause so the summary stays short.
select
    case when not_ranked_reason is null then null
         else split_part(not_ranked_reason, ':', 1) end as reason,
    count(*) as offers
from marts.gpu_cost_ranking_history
where publish_date = $publish_date
group by all
order by offers desc;
