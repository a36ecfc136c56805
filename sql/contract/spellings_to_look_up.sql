-- The cells sql/contract/normalised_runs.sql looks up (tasks/contract/normalise.py::look_up_spellings), as read:
-- every distinct spelling of the vocabulary columns (telemetry_given_cells), and the distinct numbers and timestamps
-- not in plain form (telemetry_unplain_numbers, telemetry_unplain_timestamps: in a well-formed file none); with the
-- records counted in the same pass. Macros: sql/contract/rules.sql.
select
    count(*) as records,
    telemetry_unplain_numbers(num_gpus) as num_gpus,
    telemetry_unplain_numbers(params_b) as params_b,
    telemetry_unplain_numbers(active_params_b) as active_params_b,
    telemetry_unplain_numbers(seq_len) as seq_len,
    telemetry_given_cells(precision) as precision,
    telemetry_unplain_numbers(tokens_per_sec_per_gpu) as tokens_per_sec_per_gpu,
    telemetry_unplain_numbers(tokens_processed) as tokens_processed,
    telemetry_unplain_numbers(wall_seconds) as wall_seconds,
    telemetry_unplain_timestamps(recorded_at) as recorded_at,
    telemetry_unplain_numbers(micro_batch) as micro_batch,
    telemetry_unplain_numbers(global_batch_tokens) as global_batch_tokens,
    telemetry_given_cells(workload) as workload,
    telemetry_given_cells(activation_checkpointing) as activation_checkpointing,
    telemetry_unplain_numbers(learning_rate) as learning_rate,
    telemetry_unplain_numbers(avg_power_w) as avg_power_w,
    telemetry_unplain_numbers(mfu) as mfu,
    telemetry_unplain_numbers(n_layers) as n_layers,
    telemetry_unplain_numbers(d_model) as d_model,
    telemetry_unplain_numbers(moe_experts) as moe_experts,
    telemetry_unplain_numbers(moe_top_k) as moe_top_k,
    telemetry_unplain_numbers(moe_expert_ffn) as moe_expert_ffn,
    telemetry_unplain_numbers(moe_shared_experts) as moe_shared_experts,
    telemetry_unplain_numbers(scale_up_domain_gpus) as scale_up_domain_gpus,
    telemetry_unplain_numbers(scale_out_gbps_per_gpu) as scale_out_gbps_per_gpu
from telemetry_cells
