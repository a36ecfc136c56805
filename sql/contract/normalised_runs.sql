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
    select
        cells._row_id,
        cells.source_line,
        cells.run_id,
        cells.gpu,
        coalesce(gpus.gpu, folded_gpus.gpu) as gpu_id,
        telemetry_integer(cells.num_gpus, num_gpus_spelling.whole) as num_gpus,
        telemetry_number(cells.params_b, params_b_spelling.number) as params_b,
        telemetry_number(cells.active_params_b, active_params_b_spelling.number) as active_params_b,
        telemetry_integer(cells.seq_len, seq_len_spelling.whole) as seq_len,
        precision_spelling.word as precision,
        precision_spelling.recipe as precision_recipe,
        precision_spelling.trimmed as precision_name,
        telemetry_number(
            cells.tokens_per_sec_per_gpu, tokens_per_sec_per_gpu_spelling.number
        ) as tokens_per_sec_per_gpu,
        telemetry_number(cells.tokens_processed, tokens_processed_spelling.number) as tokens_processed,
        telemetry_number(cells.wall_seconds, wall_seconds_spelling.number) as wall_seconds,
        telemetry_timestamp(cells.recorded_at, recorded_at_spelling.moment) as recorded_at,
        cells.model_name,
        telemetry_integer(cells.micro_batch, micro_batch_spelling.whole) as micro_batch,
        telemetry_integer(cells.global_batch_tokens, global_batch_tokens_spelling.whole) as global_batch_tokens,
        case when workload_spelling.trimmed is null then 'pretrain' else workload_spelling.word end as workload,
        workload_spelling.trimmed as workload_name,
        cells.parallelism,
        activation_checkpointing_spelling.word as activation_checkpointing,
        cells.framework,
        cells.optimizer,
        telemetry_number(cells.learning_rate, learning_rate_spelling.number) as learning_rate,
        telemetry_number(cells.avg_power_w, avg_power_w_spelling.number) as avg_power_w,
        telemetry_number(cells.mfu, mfu_spelling.number) as mfu,
        telemetry_integer(cells.n_layers, n_layers_spelling.whole) as n_layers,
        telemetry_integer(cells.d_model, d_model_spelling.whole) as d_model,
        telemetry_integer(cells.moe_experts, moe_experts_spelling.whole) as moe_experts,
        telemetry_integer(cells.moe_top_k, moe_top_k_spelling.whole) as moe_top_k,
        telemetry_integer(cells.moe_expert_ffn, moe_expert_ffn_spelling.whole) as moe_expert_ffn,
        telemetry_integer(cells.moe_shared_experts, moe_shared_experts_spelling.whole) as moe_shared_experts,
        telemetry_integer(cells.scale_up_domain_gpus, scale_up_domain_gpus_spelling.whole) as scale_up_domain_gpus,
        telemetry_number(
            cells.scale_out_gbps_per_gpu, scale_out_gbps_per_gpu_spelling.number
        ) as scale_out_gbps_per_gpu,
        cells.source,
        cells.quality_flag,
        cells.num_gpus as num_gpus_text,
        num_gpus_spelling.text is not null as num_gpus_looked_up,
        num_gpus_spelling.unparsed as num_gpus_unparsed,
        cells.params_b as params_b_text,
        params_b_spelling.text is not null as params_b_looked_up,
        params_b_spelling.unparsed as params_b_unparsed,
        cells.active_params_b as active_params_b_text,
        active_params_b_spelling.text is not null as active_params_b_looked_up,
        active_params_b_spelling.unparsed as active_params_b_unparsed,
        cells.seq_len as seq_len_text,
        seq_len_spelling.text is not null as seq_len_looked_up,
        seq_len_spelling.unparsed as seq_len_unparsed,
        cells.tokens_per_sec_per_gpu as tokens_per_sec_per_gpu_text,
        tokens_per_sec_per_gpu_spelling.text is not null as tokens_per_sec_per_gpu_looked_up,
        tokens_per_sec_per_gpu_spelling.unparsed as tokens_per_sec_per_gpu_unparsed,
        cells.tokens_processed as tokens_processed_text,
        tokens_processed_spelling.text is not null as tokens_processed_looked_up,
        tokens_processed_spelling.unparsed as tokens_processed_unparsed,
        cells.wall_seconds as wall_seconds_text,
        wall_seconds_spelling.text is not null as wall_seconds_looked_up,
        wall_seconds_spelling.unparsed as wall_seconds_unparsed,
        cells.recorded_at as recorded_at_text,
        recorded_at_spelling.text is not null as recorded_at_looked_up,
        recorded_at_spelling.unparsed as recorded_at_unparsed,
        cells.micro_batch as micro_batch_text,
        micro_batch_spelling.text is not null as micro_batch_looked_up,
        micro_batch_spelling.unparsed as micro_batch_unparsed,
        cells.global_batch_tokens as global_batch_tokens_text,
        global_batch_tokens_spelling.text is not null as global_batch_tokens_looked_up,
        global_batch_tokens_spelling.unparsed as global_batch_tokens_unparsed,
        activation_checkpointing_spelling.unparsed as activation_checkpointing_unparsed,
        cells.learning_rate as learning_rate_text,
        learning_rate_spelling.text is not null as learning_rate_looked_up,
        learning_rate_spelling.unparsed as learning_rate_unparsed,
        cells.avg_power_w as avg_power_w_text,
        avg_power_w_spelling.text is not null as avg_power_w_looked_up,
        avg_power_w_spelling.unparsed as avg_power_w_unparsed,
        cells.mfu as mfu_text,
        mfu_spelling.text is not null as mfu_looked_up,
        mfu_spelling.unparsed as mfu_unparsed,
        cells.n_layers as n_layers_text,
        n_layers_spelling.text is not null as n_layers_looked_up,
        n_layers_spelling.unparsed as n_layers_unparsed,
        cells.d_model as d_model_text,
        d_model_spelling.text is not null as d_model_looked_up,
        d_model_spelling.unparsed as d_model_unparsed,
        cells.moe_experts as moe_experts_text,
        moe_experts_spelling.text is not null as moe_experts_looked_up,
        moe_experts_spelling.unparsed as moe_experts_unparsed,
        cells.moe_top_k as moe_top_k_text,
        moe_top_k_spelling.text is not null as moe_top_k_looked_up,
        moe_top_k_spelling.unparsed as moe_top_k_unparsed,
        cells.moe_expert_ffn as moe_expert_ffn_text,
        moe_expert_ffn_spelling.text is not null as moe_expert_ffn_looked_up,
        moe_expert_ffn_spelling.unparsed as moe_expert_ffn_unparsed,
        cells.moe_shared_experts as moe_shared_experts_text,
        moe_shared_experts_spelling.text is not null as moe_shared_experts_looked_up,
        moe_shared_experts_spelling.unparsed as moe_shared_experts_unparsed,
        cells.scale_up_domain_gpus as scale_up_domain_gpus_text,
        scale_up_domain_gpus_spelling.text is not null as scale_up_domain_gpus_looked_up,
        scale_up_domain_gpus_spelling.unparsed as scale_up_domain_gpus_unparsed,
        cells.scale_out_gbps_per_gpu as scale_out_gbps_per_gpu_text,
        scale_out_gbps_per_gpu_spelling.text is not null as scale_out_gbps_per_gpu_looked_up,
        scale_out_gbps_per_gpu_spelling.unparsed as scale_out_gbps_per_gpu_unparsed
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
        _row_id,
        source_line,
        run_id,
        gpu_id as gpu,
        gpu as gpu_name,
        num_gpus,
        model_name,
        params_b,
        coalesce(active_params_b, params_b) as active_params_b,
        n_layers,
        d_model,
        moe_experts,
        moe_top_k,
        moe_expert_ffn,
        moe_shared_experts,
        scale_up_domain_gpus,
        scale_out_gbps_per_gpu,
        seq_len,
        precision,
        precision_name,
        precision_recipe,
        workload,
        micro_batch,
        global_batch_tokens,
        parallelism,
        activation_checkpointing,
        framework,
        optimizer,
        learning_rate,
        avg_power_w,
        mfu as mfu_reported,
        tokens_processed,
        wall_seconds,
        coalesce(
            tokens_per_sec_per_gpu,
            case when wall_seconds > 0 and not isnan(wall_seconds) then tokens_processed / wall_seconds / num_gpus end
        ) as tokens_per_sec_per_gpu,
        recorded_at,
        source,
        quality_flag,
        workload_name,
        nullif(concat_ws(
            '; ',
            telemetry_unparsed('num_gpus', num_gpus_text, num_gpus, num_gpus_looked_up, num_gpus_unparsed),
            telemetry_unparsed('params_b', params_b_text, params_b, params_b_looked_up, params_b_unparsed),
            telemetry_unparsed(
                'active_params_b', active_params_b_text, active_params_b,
                active_params_b_looked_up, active_params_b_unparsed
            ),
            telemetry_unparsed('seq_len', seq_len_text, seq_len, seq_len_looked_up, seq_len_unparsed),
            telemetry_unparsed(
                'tokens_per_sec_per_gpu', tokens_per_sec_per_gpu_text, tokens_per_sec_per_gpu,
                tokens_per_sec_per_gpu_looked_up, tokens_per_sec_per_gpu_unparsed
            ),
            telemetry_unparsed(
                'tokens_processed', tokens_processed_text, tokens_processed,
                tokens_processed_looked_up, tokens_processed_unparsed
            ),
            telemetry_unparsed(
                'wall_seconds', wall_seconds_text, wall_seconds, wall_seconds_looked_up, wall_seconds_unparsed
            ),
            telemetry_unparsed(
                'recorded_at', recorded_at_text, recorded_at, recorded_at_looked_up, recorded_at_unparsed
            ),
            telemetry_unparsed(
                'micro_batch', micro_batch_text, micro_batch, micro_batch_looked_up, micro_batch_unparsed
            ),
            telemetry_unparsed(
                'global_batch_tokens', global_batch_tokens_text, global_batch_tokens,
                global_batch_tokens_looked_up, global_batch_tokens_unparsed
            ),
            activation_checkpointing_unparsed,
            telemetry_unparsed(
                'learning_rate', learning_rate_text, learning_rate, learning_rate_looked_up, learning_rate_unparsed
            ),
            telemetry_unparsed(
                'avg_power_w', avg_power_w_text, avg_power_w, avg_power_w_looked_up, avg_power_w_unparsed
            ),
            telemetry_unparsed('mfu', mfu_text, mfu, mfu_looked_up, mfu_unparsed),
            telemetry_unparsed('n_layers', n_layers_text, n_layers, n_layers_looked_up, n_layers_unparsed),
            telemetry_unparsed('d_model', d_model_text, d_model, d_model_looked_up, d_model_unparsed),
            telemetry_unparsed(
                'moe_experts', moe_experts_text, moe_experts, moe_experts_looked_up, moe_experts_unparsed
            ),
            telemetry_unparsed('moe_top_k', moe_top_k_text, moe_top_k, moe_top_k_looked_up, moe_top_k_unparsed),
            telemetry_unparsed(
                'moe_expert_ffn', moe_expert_ffn_text, moe_expert_ffn, moe_expert_ffn_looked_up, moe_expert_ffn_unparsed
            ),
            telemetry_unparsed(
                'moe_shared_experts', moe_shared_experts_text, moe_shared_experts,
                moe_shared_experts_looked_up, moe_shared_experts_unparsed
            ),
            telemetry_unparsed(
                'scale_up_domain_gpus', scale_up_domain_gpus_text, scale_up_domain_gpus,
                scale_up_domain_gpus_looked_up, scale_up_domain_gpus_unparsed
            ),
            telemetry_unparsed(
                'scale_out_gbps_per_gpu', scale_out_gbps_per_gpu_text, scale_out_gbps_per_gpu,
                scale_out_gbps_per_gpu_looked_up, scale_out_gbps_per_gpu_unparsed
            )
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
