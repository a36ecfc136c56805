-- The report page: the lowest price per GPU-hour of each GPU in $gpus (the GPUs on tonight's Pareto fronts), per
-- day observed and pricing (spot, on demand, each commitment), over every stored observation.
select
    gpu,
    pricing,
    observed_at::date as observed_on,
    min(usd_per_gpu_hour) as lowest_usd_per_gpu_hour
from price_history
where list_contains($gpus, gpu) and usd_per_gpu_hour is not null
group by all
order by gpu, pricing, observed_on;
