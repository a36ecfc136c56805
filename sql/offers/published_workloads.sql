-- The workloads of tonight's published ranking (for `gpucost offers --workload` errors).
select distinct workload from gpu_cost_ranking order by workload;
