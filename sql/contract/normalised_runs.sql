-- The contract's one normaliser. Telemetry records (staging_file_records, as read: the contract's cells as text; the
-- ingest's staged file, or the rows `gpucost predict` and the registered model score) -> the view
-- staging_normalised_runs: the contract's values in its vocabulary, the spellings as given, the unreadable cells
-- named (unparsed_fields), the record's hash and line. Text cells are trimmed and plain numbers and timestamps read
-- here (sql/contract/rules.sql); every spelling and every other cell is looked up in `telemetry_spellings` (once per
-- distinct text: tasks/contract/normalise.py::look_up_spellings); GPU names in `telemetry_gpu_lookup` (the alias
-- table plus each canonical id), else, trimmed, lower-cased and with runs of spaces collapsed, in
-- `telemetry_gpu_folded` (keys that name one GPU only: tasks/contract/normalise.py::folded_gpus); all registered by
-- tasks/contract/normalise.py::normalised_records. record_hash: SHA-256 of the contract values as polars writes them
-- (as the first stored records were hashed), joined by U+001F, null as U+0000, each late optional column as U+001F
-- name=value where given (a record stored before those columns keeps its hash): equal hashes = the same record,
-- whatever the file format (sql/telemetry/classify_runs.sql).
create or replace temp view staging_normalised_runs as
with spellings as (
    select * from telemetry_spellings
),

parsed as (
    -- each number, integer and timestamp cell as {value, unread} (sql/contract/rules.sql, telemetry_cell)
    select
        cells._row_id,
        cells.source_line,
        cells.run_id,
        cells.gpu,
        coalesce(gpus.gpu, folded_gpus.gpu) as gpu_id,
        cells.model_name,
        cells.parallelism,
        cells.framework,
        cells.optimizer,
        cells.source,
        cells.quality_flag,
        precision_spelling.word as precision,
        precision_spelling.recipe as precision_recipe,
        precision_spelling.trimmed as precision_name,
        case when workload_spelling.trimmed is null then 'pretrain' else workload_spelling.word end as workload,
        workload_spelling.trimmed as workload_name,
        activation_checkpointing_spelling.word as activation_checkpointing,
        activation_checkpointing_spelling.unread as activation_checkpointing_unread,
        telemetry_integer_cell(cells.num_gpus, num_gpus_spelling) as num_gpus,
        telemetry_number_cell(cells.params_b, params_b_spelling) as params_b,
        telemetry_number_cell(cells.active_params_b, active_params_b_spelling) as active_params_b,
        telemetry_integer_cell(cells.seq_len, seq_len_spelling) as seq_len,
        telemetry_number_cell(cells.tokens_per_sec_per_gpu, tokens_per_sec_per_gpu_spelling) as tokens_per_sec_per_gpu,
        telemetry_number_cell(cells.tokens_processed, tokens_processed_spelling) as tokens_processed,
        telemetry_number_cell(cells.wall_seconds, wall_seconds_spelling) as wall_seconds,
        telemetry_timestamp_cell(cells.recorded_at, recorded_at_spelling) as recorded_at,
        telemetry_integer_cell(cells.micro_batch, micro_batch_spelling) as micro_batch,
        telemetry_integer_cell(cells.global_batch_tokens, global_batch_tokens_spelling) as global_batch_tokens,
        telemetry_number_cell(cells.learning_rate, learning_rate_spelling) as learning_rate,
        telemetry_number_cell(cells.avg_power_w, avg_power_w_spelling) as avg_power_w,
        telemetry_number_cell(cells.mfu, mfu_spelling) as mfu,
        telemetry_integer_cell(cells.n_layers, n_layers_spelling) as n_layers,
        telemetry_integer_cell(cells.d_model, d_model_spelling) as d_model,
        telemetry_integer_cell(cells.moe_experts, moe_experts_spelling) as moe_experts,
        telemetry_integer_cell(cells.moe_top_k, moe_top_k_spelling) as moe_top_k,
        telemetry_integer_cell(cells.moe_expert_ffn, moe_expert_ffn_spelling) as moe_expert_ffn,
        telemetry_integer_cell(cells.moe_shared_experts, moe_shared_experts_spelling) as moe_shared_experts,
        telemetry_integer_cell(cells.scale_up_domain_gpus, scale_up_domain_gpus_spelling) as scale_up_domain_gpus,
        telemetry_number_cell(cells.scale_out_gbps_per_gpu, scale_out_gbps_per_gpu_spelling) as scale_out_gbps_per_gpu
    from telemetry_cells as cells
    left join telemetry_gpu_lookup as gpus on cells.gpu = gpus.alias
    left join telemetry_gpu_folded as folded_gpus
        on telemetry_spelling_key(cells.gpu) = folded_gpus.alias
    left join spellings as num_gpus_spelling
        on num_gpus_spelling.column_name = 'num_gpus'
            and cells.num_gpus = num_gpus_spelling.text
    left join spellings as params_b_spelling
        on params_b_spelling.column_name = 'params_b'
            and cells.params_b = params_b_spelling.text
    left join spellings as active_params_b_spelling
        on active_params_b_spelling.column_name = 'active_params_b'
            and cells.active_params_b = active_params_b_spelling.text
    left join spellings as seq_len_spelling
        on seq_len_spelling.column_name = 'seq_len'
            and cells.seq_len = seq_len_spelling.text
    left join spellings as precision_spelling
        on precision_spelling.column_name = 'precision'
            and cells.precision = precision_spelling.text
    left join spellings as tokens_per_sec_per_gpu_spelling
        on tokens_per_sec_per_gpu_spelling.column_name = 'tokens_per_sec_per_gpu'
            and cells.tokens_per_sec_per_gpu = tokens_per_sec_per_gpu_spelling.text
    left join spellings as tokens_processed_spelling
        on tokens_processed_spelling.column_name = 'tokens_processed'
            and cells.tokens_processed = tokens_processed_spelling.text
    left join spellings as wall_seconds_spelling
        on wall_seconds_spelling.column_name = 'wall_seconds'
            and cells.wall_seconds = wall_seconds_spelling.text
    left join spellings as recorded_at_spelling
        on recorded_at_spelling.column_name = 'recorded_at'
            and cells.recorded_at = recorded_at_spelling.text
    left join spellings as micro_batch_spelling
        on micro_batch_spelling.column_name = 'micro_batch'
            and cells.micro_batch = micro_batch_spelling.text
    left join spellings as global_batch_tokens_spelling
        on global_batch_tokens_spelling.column_name = 'global_batch_tokens'
            and cells.global_batch_tokens = global_batch_tokens_spelling.text
    left join spellings as workload_spelling
        on workload_spelling.column_name = 'workload'
            and cells.workload = workload_spelling.text
    left join spellings as activation_checkpointing_spelling
        on activation_checkpointing_spelling.column_name = 'activation_checkpointing'
            and cells.activation_checkpointing = activation_checkpointing_spelling.text
    left join spellings as learning_rate_spelling
        on learning_rate_spelling.column_name = 'learning_rate'
            and cells.learning_rate = learning_rate_spelling.text
    left join spellings as avg_power_w_spelling
        on avg_power_w_spelling.column_name = 'avg_power_w'
            and cells.avg_power_w = avg_power_w_spelling.text
    left join spellings as mfu_spelling
        on mfu_spelling.column_name = 'mfu'
            and cells.mfu = mfu_spelling.text
    left join spellings as n_layers_spelling
        on n_layers_spelling.column_name = 'n_layers'
            and cells.n_layers = n_layers_spelling.text
    left join spellings as d_model_spelling
        on d_model_spelling.column_name = 'd_model'
            and cells.d_model = d_model_spelling.text
    left join spellings as moe_experts_spelling
        on moe_experts_spelling.column_name = 'moe_experts'
            and cells.moe_experts = moe_experts_spelling.text
    left join spellings as moe_top_k_spelling
        on moe_top_k_spelling.column_name = 'moe_top_k'
            and cells.moe_top_k = moe_top_k_spelling.text
    left join spellings as moe_expert_ffn_spelling
        on moe_expert_ffn_spelling.column_name = 'moe_expert_ffn'
            and cells.moe_expert_ffn = moe_expert_ffn_spelling.text
    left join spellings as moe_shared_experts_spelling
        on moe_shared_experts_spelling.column_name = 'moe_shared_experts'
            and cells.moe_shared_experts = moe_shared_experts_spelling.text
    left join spellings as scale_up_domain_gpus_spelling
        on scale_up_domain_gpus_spelling.column_name = 'scale_up_domain_gpus'
            and cells.scale_up_domain_gpus = scale_up_domain_gpus_spelling.text
    left join spellings as scale_out_gbps_per_gpu_spelling
        on scale_out_gbps_per_gpu_spelling.column_name = 'scale_out_gbps_per_gpu'
            and cells.scale_out_gbps_per_gpu = scale_out_gbps_per_gpu_spelling.text
),

normalised as (
    select
        parsed._row_id,
        parsed.source_line,
        parsed.run_id,
        parsed.gpu_id as gpu,
        parsed.gpu as gpu_name,
        parsed.num_gpus.value as num_gpus,
        parsed.model_name,
        parsed.params_b.value as params_b,
        coalesce(parsed.active_params_b.value, parsed.params_b.value) as active_params_b,
        parsed.n_layers.value as n_layers,
        parsed.d_model.value as d_model,
        parsed.moe_experts.value as moe_experts,
        parsed.moe_top_k.value as moe_top_k,
        parsed.moe_expert_ffn.value as moe_expert_ffn,
        parsed.moe_shared_experts.value as moe_shared_experts,
        parsed.scale_up_domain_gpus.value as scale_up_domain_gpus,
        parsed.scale_out_gbps_per_gpu.value as scale_out_gbps_per_gpu,
        parsed.seq_len.value as seq_len,
        parsed.precision,
        parsed.precision_name,
        parsed.precision_recipe,
        parsed.workload,
        parsed.micro_batch.value as micro_batch,
        parsed.global_batch_tokens.value as global_batch_tokens,
        parsed.parallelism,
        parsed.activation_checkpointing,
        parsed.framework,
        parsed.optimizer,
        parsed.learning_rate.value as learning_rate,
        parsed.avg_power_w.value as avg_power_w,
        parsed.mfu.value as mfu_reported,
        parsed.tokens_processed.value as tokens_processed,
        parsed.wall_seconds.value as wall_seconds,
        coalesce(
            parsed.tokens_per_sec_per_gpu.value,
            case
                when parsed.wall_seconds.value > 0 and not isnan(parsed.wall_seconds.value)
                    then parsed.tokens_processed.value / parsed.wall_seconds.value / parsed.num_gpus.value
            end
        ) as tokens_per_sec_per_gpu,
        parsed.recorded_at.value as recorded_at,
        parsed.source,
        parsed.quality_flag,
        parsed.workload_name,
        nullif(concat_ws(
            '; ',
            telemetry_unparsed('num_gpus', parsed.num_gpus.unread),
            telemetry_unparsed('params_b', parsed.params_b.unread),
            telemetry_unparsed('active_params_b', parsed.active_params_b.unread),
            telemetry_unparsed('seq_len', parsed.seq_len.unread),
            telemetry_unparsed('tokens_per_sec_per_gpu', parsed.tokens_per_sec_per_gpu.unread),
            telemetry_unparsed('tokens_processed', parsed.tokens_processed.unread),
            telemetry_unparsed('wall_seconds', parsed.wall_seconds.unread),
            telemetry_unparsed('recorded_at', parsed.recorded_at.unread),
            telemetry_unparsed('micro_batch', parsed.micro_batch.unread),
            telemetry_unparsed('global_batch_tokens', parsed.global_batch_tokens.unread),
            telemetry_unparsed('activation_checkpointing', parsed.activation_checkpointing_unread),
            telemetry_unparsed('learning_rate', parsed.learning_rate.unread),
            telemetry_unparsed('avg_power_w', parsed.avg_power_w.unread),
            telemetry_unparsed('mfu', parsed.mfu.unread),
            telemetry_unparsed('n_layers', parsed.n_layers.unread),
            telemetry_unparsed('d_model', parsed.d_model.unread),
            telemetry_unparsed('moe_experts', parsed.moe_experts.unread),
            telemetry_unparsed('moe_top_k', parsed.moe_top_k.unread),
            telemetry_unparsed('moe_expert_ffn', parsed.moe_expert_ffn.unread),
            telemetry_unparsed('moe_shared_experts', parsed.moe_shared_experts.unread),
            telemetry_unparsed('scale_up_domain_gpus', parsed.scale_up_domain_gpus.unread),
            telemetry_unparsed('scale_out_gbps_per_gpu', parsed.scale_out_gbps_per_gpu.unread)
        ), '') as unparsed_fields
    from parsed
),

final as (
    select
        *,
        sha256(
            concat_ws(
                chr(31),
                record_value(run_id),
                record_value(gpu),
                record_value(gpu_name),
                record_value(num_gpus::varchar),
                record_value(model_name),
                record_value(polars_float_text(params_b)),
                record_value(polars_float_text(active_params_b)),
                record_value(n_layers::varchar),
                record_value(d_model::varchar),
                record_value(seq_len::varchar),
                record_value(precision),
                record_value(precision_name),
                record_value(precision_recipe),
                record_value(workload),
                record_value(micro_batch::varchar),
                record_value(global_batch_tokens::varchar),
                record_value(parallelism),
                record_value(activation_checkpointing),
                record_value(framework),
                record_value(optimizer),
                record_value(polars_float_text(learning_rate)),
                record_value(polars_float_text(avg_power_w)),
                record_value(polars_float_text(mfu_reported)),
                record_value(polars_float_text(tokens_processed)),
                record_value(polars_float_text(wall_seconds)),
                record_value(polars_float_text(tokens_per_sec_per_gpu)),
                record_value(polars_timestamp_text(recorded_at)),
                record_value(source),
                record_value(quality_flag)
            )
            || concat(
                record_late('moe_experts', moe_experts::varchar),
                record_late('moe_top_k', moe_top_k::varchar),
                record_late('moe_expert_ffn', moe_expert_ffn::varchar),
                record_late('moe_shared_experts', moe_shared_experts::varchar),
                record_late('scale_up_domain_gpus', scale_up_domain_gpus::varchar),
                record_late('scale_out_gbps_per_gpu', polars_float_text(scale_out_gbps_per_gpu))
            )
        ) as record_hash
    from normalised
)

select * from final
