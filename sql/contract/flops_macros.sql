-- Model FLOPs per token and dense peaks: the ONE place these formulas are written down (part of the telemetry
-- contract: the warehouse creates them on every connect, tasks/warehouse.py, and a prediction in its in-memory
-- database, tasks/model/contract_rows.py). The
-- telemetry peak check (sql/telemetry/stage_runs.sql) and the features (sql/features/build_features.sql)
-- both call these macros.
--
-- flops_per_token = parameter term + attention term                         (FLOPs per trained token)
--   parameter term = 6 x active parameters      (pretrain, sft: forward 2N + backward 4N; Kaplan et al.
--                                                 2020 sec. 2.1, Chinchilla, PaLM appendix B)
--                  = 4 x active parameters      (lora, qlora: the base weights are frozen, so the backward
--                                                 pass computes gradients w.r.t. activations (2N) but not
--                                                 w.r.t. weights; adapter FLOPs (rank << d_model) are
--                                                 negligible; QLoRA's dequantisation is not model FLOPs)
--   attention term = 12 x n_layers x d_model x seq_len
--                    (QK^T and attention x V: 2 x 2 x seq_len x d_model per layer forward, x3 for
--                     forward + backward; PaLM, Chowdhery et al. 2022, appendix B "12 L H Q T";
--                     Megatron-LM, Narayanan et al. 2021 eq. 3 without recomputation). It is the same
--                     for LoRA: those matmuls have no weights, so their backward is always computed.
--                    Not halved for causal masking (the PaLM/Megatron convention). Activation
--                    recomputation is NOT counted (model FLOPs, not hardware FLOPs).
--   The attention term is 0 where the model shape (n_layers, d_model) is unknown: the feature column
--   attention_term_known says so.
-- MFU = achieved model FLOP/s per GPU (tokens/s/GPU x flops_per_token) / dense peak for the precision.
create or replace macro parameter_flops_per_token(workload, active_params_b) as
(case when workload in ('lora', 'qlora') then 4.0 else 6.0 end)::double * active_params_b * 1e9;

create or replace macro attention_flops_per_token(n_layers, d_model, seq_len) as
12.0::double * n_layers * d_model * seq_len;

-- Dense peak TFLOP/s per GPU for a contract precision (core.gpu_specs columns; the parameter is not named
-- `precision`, a type keyword sqlfluff cannot parse there). fp32/tf32 have no
-- column in gpu_specs.csv, so no peak: such runs are quarantined with that reason.
create or replace macro dense_peak_tflops(precision_name, fp16_tflops, bf16_tflops, fp8_tflops, fp4_tflops) as
case precision_name
    when 'fp16' then fp16_tflops
    when 'bf16' then bf16_tflops
    when 'fp8' then fp8_tflops
    when 'fp4' then fp4_tflops
end;
