-- The cells sql/contract/normalised_runs.sql looks up (tasks/contract/normalise.py::look_up_spellings), as read:
-- every distinct spelling of the vocabulary columns, and the distinct numbers and timestamps not in plain form (in
-- a well-formed file none); with the records counted in the same pass.
select
    count(*) as records,
    list(distinct num_gpus) filter (where not telemetry_plain_number(num_gpus)) as num_gpus,
    list(distinct params_b) filter (where not telemetry_plain_number(params_b)) as params_b,
    list(distinct active_params_b) filter (where not telemetry_plain_number(active_params_b)) as active_params_b,
    list(distinct seq_len) filter (where not telemetry_plain_number(seq_len)) as seq_len,
    list(distinct precision) filter (where precision is not null) as precision,
    list(distinct tokens_per_sec_per_gpu)
    filter (where not telemetry_plain_number(tokens_per_sec_per_gpu)) as tokens_per_sec_per_gpu,
    list(distinct tokens_processed) filter (where not telemetry_plain_number(tokens_processed)) as tokens_processed,
    list(distinct wall_seconds) filter (where not telemetry_plain_number(wall_seconds)) as wall_seconds,
    list(distinct recorded_at) filter (where not telemetry_plain_timestamp(recorded_at)) as recorded_at,
    list(distinct micro_batch) filter (where not telemetry_plain_number(micro_batch)) as micro_batch,
    list(distinct global_batch_tokens)
    filter (where not telemetry_plain_number(global_batch_tokens)) as global_batch_tokens,
    list(distinct workload) filter (where workload is not null) as workload,
    list(distinct activation_checkpointing)
    filter (where activation_checkpointing is not null) as activation_checkpointing,
    list(distinct learning_rate) filter (where not telemetry_plain_number(learning_rate)) as learning_rate,
    list(distinct avg_power_w) filter (where not telemetry_plain_number(avg_power_w)) as avg_power_w,
    list(distinct mfu) filter (where not telemetry_plain_number(mfu)) as mfu,
    list(distinct n_layers) filter (where not telemetry_plain_number(n_layers)) as n_layers,
    list(distinct d_model) filter (where not telemetry_plain_number(d_model)) as d_model,
    list(distinct moe_experts) filter (where not telemetry_plain_number(moe_experts)) as moe_experts,
    list(distinct moe_top_k) filter (where not telemetry_plain_number(moe_top_k)) as moe_top_k,
    list(distinct moe_expert_ffn) filter (where not telemetry_plain_number(moe_expert_ffn)) as moe_expert_ffn,
    list(distinct moe_shared_experts)
    filter (where not telemetry_plain_number(moe_shared_experts)) as moe_shared_experts,
    list(distinct scale_up_domain_gpus)
    filter (where not telemetry_plain_number(scale_up_domain_gpus)) as scale_up_domain_gpus,
    list(distinct scale_out_gbps_per_gpu)
    filter (where not telemetry_plain_number(scale_out_gbps_per_gpu)) as scale_out_gbps_per_gpu
from telemetry_cells
