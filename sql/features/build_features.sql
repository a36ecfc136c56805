-- Feature rows for training runs: the token-efficiency models' only input (contract 1).
-- `feature_input` is registered by tasks/contract/features.py: normalised runs (tasks/contract/schema.py
-- NORMALISED_SCHEMA columns) plus `_feature_row` (input order). Throughput is optional (prediction inputs): without
-- it the target, achieved TFLOP/s and MFU are null. FLOPs per token: see sql/contract/flops_macros.sql.
-- $model_shapes: data/reference/model_shapes.csv (model_name -> n_layers, d_model, heads, vocabulary, FFN, and for
-- MoE models routed experts, top-k, shared experts, expert FFN size, layers without experts).
-- $matmul_ceilings: data/reference/gpu_matmul_ceilings.csv (gpu -> measured maximum achievable matmul
-- TFLOP/s and the theoretical peak it was measured against, bf16 and fp8, and the board power limit of the part
-- it was measured on).
with shape_names as (
    select model_name from read_csv($model_shapes, header = true, all_varchar = true)
),

-- a name model_shapes.csv does not spell exactly is matched case-insensitively and without a hub organisation
-- ("meta-llama/Llama-3.1-70B" -> Llama-3.1-70B), where that key names one shape only
folded_shape_names as (
    select
        lower(model_name) as name_key,
        min(model_name) as model_name
    from shape_names
    group by lower(model_name)
    having count(*) = 1
),

-- the run's name folded the same way, and its base model's: a fine-tuned or converted release has the shape of
-- the model it was released from ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Llama-2-7b-chat-hf", "Mistral-7B-v0.3",
-- "DeepSeek-V3-Base" -> Qwen3-30B-A3B, Llama-2-7B, Mistral-7B, DeepSeek-V3), used when the name itself matches
-- no shape
input_names as (
    select
        *,
        lower(trim(regexp_replace(model_name, '^.*/', ''))) as folded_model_name
    from feature_input
),

keyed_names as (
    select
        *,
        regexp_replace(
            regexp_replace(folded_model_name, '-(instruct|chat|it|hf|base)([-_.].*)?$', ''),
            '-v[0-9]+([.][0-9]+)+$', ''
        ) as base_model_key
    from input_names
),

runs as (
    select
        keyed_names.* exclude (folded_model_name, base_model_key),
        coalesce(exact_name.model_name, folded_name.model_name, base_name.model_name) as shape_model_name
    from keyed_names
    left join shape_names as exact_name on keyed_names.model_name = exact_name.model_name
    left join folded_shape_names as folded_name on keyed_names.folded_model_name = folded_name.name_key
    left join folded_shape_names as base_name on keyed_names.base_model_key = base_name.name_key
),

specs as (
    select * from core.gpu_specs
),

shapes as (
    select
        model_name,
        n_layers::bigint as n_layers,
        d_model::bigint as d_model,
        n_heads::bigint as n_heads,
        n_kv_heads::bigint as n_kv_heads,
        head_dim::bigint as head_dim,
        attention_layers::bigint as attention_layers,
        vocab::bigint as vocab,
        attention,
        dense_ffn::bigint as dense_ffn,
        ffn_matrices::bigint as ffn_matrices,
        moe_experts::bigint as moe_experts,
        moe_top_k::bigint as moe_top_k,
        moe_shared_experts::bigint as moe_shared_experts,
        moe_expert_ffn::bigint as moe_expert_ffn,
        moe_dense_layers::bigint as moe_dense_layers
    from read_csv($model_shapes, header = true, all_varchar = true)
),

ceilings as (
    select
        gpu,
        bf16_mamf_tflops::double / bf16_theory_tflops::double as matmul_ceiling_16bit,
        fp8_mamf_tflops::double / fp8_theory_tflops::double as matmul_ceiling_lowp,
        mamf_power_w::double as matmul_ceiling_power_w
    from read_csv($matmul_ceilings, header = true, all_varchar = true)
),

joined as (
    select
        runs.*,
        -- the row's own shape wins; else the shipped shape of its model_name
        case when runs.n_layers is not null and runs.d_model is not null then runs.n_layers
            else shapes.n_layers
        end as shape_n_layers,
        case when runs.n_layers is not null and runs.d_model is not null then runs.d_model
            else shapes.d_model
        end as shape_d_model,
        dense_peak_tflops(
            runs.precision, specs.fp16_dense_tflops, specs.bf16_dense_tflops,
            specs.fp8_dense_tflops, specs.fp4_dense_tflops
        ) as peak_tflops,
        -- attention, norms and every non-linear matmul run at 16 bit whatever the recipe of the linear layers
        coalesce(specs.bf16_dense_tflops, specs.fp16_dense_tflops) as peak_16bit_tflops,
        specs.memory_gb as gpu_memory_gb,
        specs.mem_bandwidth_tbps,
        specs.tdp_w,
        specs.intra_node_bw_gbps_unidir,
        shapes.n_heads as shape_n_heads,
        shapes.n_kv_heads as shape_n_kv_heads,
        shapes.head_dim as shape_head_dim,
        shapes.attention_layers as shape_attention_layers,
        shapes.vocab as shape_vocab,
        shapes.attention as shape_attention,
        shapes.dense_ffn as shape_dense_ffn,
        shapes.ffn_matrices as shape_ffn_matrices,
        -- MoE shape: the row's own values win, column by column; else the shipped shape of its model_name
        coalesce(runs.moe_experts, shapes.moe_experts) as shape_moe_experts,
        coalesce(runs.moe_top_k, shapes.moe_top_k) as shape_moe_top_k,
        coalesce(runs.moe_expert_ffn, shapes.moe_expert_ffn) as shape_moe_expert_ffn,
        coalesce(
            runs.moe_shared_experts, shapes.moe_shared_experts,
            case when coalesce(runs.moe_experts, shapes.moe_experts) is not null then 0 end)
            as shape_moe_shared_experts,
        case when runs.moe_experts is not null and shapes.moe_experts is null then 0
            else shapes.moe_dense_layers
        end as shape_moe_dense_layers,
        runs.moe_experts is not null or runs.moe_top_k is not null or runs.moe_expert_ffn is not null
        or runs.moe_shared_experts is not null as moe_given_by_row,
        -- the machine: the row's, else the GPU system's default (recorded in *_defaulted)
        coalesce(runs.scale_up_domain_gpus, specs.scale_up_domain_gpus, 1) as machine_scale_up_domain_gpus,
        coalesce(runs.scale_out_gbps_per_gpu, specs.scale_out_gbps_per_gpu) as machine_scale_out_gbps_per_gpu,
        runs.scale_up_domain_gpus is null as scale_up_defaulted,
        runs.scale_out_gbps_per_gpu is null as scale_out_defaulted,
        ceilings.matmul_ceiling_16bit,
        ceilings.matmul_ceiling_lowp,
        ceilings.matmul_ceiling_power_w
    from runs
    left join specs on runs.gpu = specs.gpu
    left join ceilings on runs.gpu = ceilings.gpu
    left join shapes on runs.shape_model_name = shapes.model_name
),

-- an MoE model (by its shape: more routed experts than it routes each token to) whose row gives no active
-- parameters (normalised: active = total) runs only top_k of its experts. Billions of parameters, from the shape:
-- routed = experts x FFN matrices (3: SwiGLU, when the shape does not say) x d_model x expert FFN x layers with
-- experts, idle = the (experts - top_k) of them a token skips, and the rest (estimated: untied embeddings, attention
-- as GQA 2 x d_model x head_dim x (heads + KV heads) or, for MLA, 2 x d_model x heads x head_dim, per layer, the
-- dense layers' FFN, the shared experts).
moe_parts as (
    select
        *,
        coalesce(shape_ffn_matrices, 3)::double * shape_d_model * shape_moe_expert_ffn
        * (shape_n_layers - coalesce(shape_moe_dense_layers, 0)) / 1e9 as one_expert_all_layers_b,
        coalesce(shape_head_dim, shape_d_model / nullif(shape_n_heads, 0), shape_d_model)::double as attention_head_dim
    from joined
),

moe_counts as (
    select
        *,
        shape_moe_experts * one_expert_all_layers_b as routed_params_b,
        (shape_moe_experts - shape_moe_top_k) * one_expert_all_layers_b as idle_expert_params_b,
        (
            2.0 * coalesce(shape_vocab, 0) * shape_d_model
            + shape_n_layers * 2.0 * shape_d_model * attention_head_dim * case
                when shape_attention = 'mla' then coalesce(shape_n_heads, 1)
                else coalesce(shape_n_heads, 1) + coalesce(shape_n_kv_heads, shape_n_heads, 1)
            end
            + coalesce(shape_moe_dense_layers, 0) * coalesce(shape_ffn_matrices, 3)::double * shape_d_model
            * coalesce(shape_dense_ffn, 0)
        ) / 1e9 + coalesce(shape_moe_shared_experts, 0) * one_expert_all_layers_b as rest_params_b
    from moe_parts
),

-- The stated total less the idle experts is exact when the total is (DeepSeek-V3 at 671 B: 37.5 B active), but
-- carries the whole rounding of a rounded total ("1T" for Kimi-K2's 1.03 T would leave 6.5 B of its 32 B). So the
-- difference is taken only where the total less the routed experts is a plausible rest (0.5-1.5x the estimate);
-- otherwise the active share of the shape scales the stated total (Kimi-K2 at 1000: 34.5 B).
moe_active as (
    select
        * exclude (one_expert_all_layers_b, attention_head_dim, routed_params_b, idle_expert_params_b, rest_params_b)
        replace (
            case
                when active_params_b >= params_b and shape_moe_experts > shape_moe_top_k and idle_expert_params_b > 0
                    then case
                            when params_b - routed_params_b between 0.5 * rest_params_b and 1.5 * rest_params_b
                                then params_b - idle_expert_params_b
                            else params_b * (rest_params_b + routed_params_b - idle_expert_params_b)
                                / (rest_params_b + routed_params_b)
                        end
                else active_params_b
            end as active_params_b
        )
    from moe_counts
),

flops as (
    select
        *,
        coalesce(attention_flops_per_token(shape_n_layers, shape_d_model, seq_len), 0.0)
            as attention_flops_per_token,                                   -- FLOPs per token
        shape_n_layers is not null and shape_d_model is not null as attention_term_known
    from moe_active
),

per_token as (
    select
        *,
        parameter_flops_per_token(workload, active_params_b) + attention_flops_per_token
            as flops_per_token                                              -- FLOPs per token
    from flops
),

final as (
    select
        _feature_row,
        run_id,
        gpu,
        num_gpus,
        log2(num_gpus) as log2_num_gpus,
        params_b,                          -- billions
        active_params_b,                   -- billions
        active_params_b < params_b as is_moe,
        seq_len,                           -- tokens
        precision,                         -- family: the linear matmuls' peak
        precision_recipe,                  -- none | delayed | ... | mx | nv
        workload,
        micro_batch,
        global_batch_tokens,
        global_batch_tokens / num_gpus as tokens_per_gpu_per_step,
        activation_checkpointing,          -- none | selective | full
        framework,
        parallelism,
        optimizer,
        learning_rate,
        source,
        -- the source's identity without its revision: the repository before ':' less a trailing '@commit' and
        -- ' (note)' (mosaicml/llm-foundry; 'a/b (fork of c/b)@ab57af8bf' -> a/b), a document without its edition
        -- ('NeMo Framework User Guide, Performance Summary (NeMo 25.07 …)'), a web page's host (arxiv.org)
        nullif(case
            when source ilike 'http%://%' then split_part(source, '/', 3)
            else regexp_replace(
                    regexp_replace(split_part(source, ':', 1), '@[0-9A-Fa-f]{7,40}$', ''),
                    '\s+\(.*\)$', ''
                )
        end, '') as source_group,
        peak_tflops,                       -- dense TFLOP/s per GPU, run's precision
        peak_16bit_tflops,                 -- dense bf16 (else fp16) TFLOP/s per GPU
        matmul_ceiling_16bit,    -- measured max achievable bf16 matmul / peak (fraction)
        matmul_ceiling_lowp,     -- the same for fp8 (fraction; null where not measured)
        matmul_ceiling_power_w,  -- W: board power limit of the part the ceilings were measured on
        gpu_memory_gb,                     -- GB per GPU
        mem_bandwidth_tbps,                -- TB/s per GPU
        tdp_w,                             -- W per GPU
        intra_node_bw_gbps_unidir,                                          -- GB/s per direction
        flops_per_token,                   -- FLOPs per token
        attention_flops_per_token,         -- FLOPs per token
        attention_term_known,
        shape_n_layers as n_layers,        -- layers (row's shape, else model_shapes.csv)
        shape_d_model as d_model,          -- hidden size
        params_b / num_gpus as params_per_gpu_b,     -- billions per GPU
        params_b * 1e9 / (num_gpus * gpu_memory_gb) as memory_pressure_params_per_gb, -- parameters per GB
        peak_tflops * 1e12 / flops_per_token as physics_bound_tokens_per_sec_per_gpu, -- at MFU 1
        tokens_per_sec_per_gpu,            -- target, tokens/s per GPU
        tokens_per_sec_per_gpu * flops_per_token / 1e12 as achieved_tflops_per_gpu, -- model TFLOP/s per GPU
        tokens_per_sec_per_gpu * flops_per_token / (peak_tflops * 1e12) as mfu,
        quality_flag,                      -- non-null: kept out of training
        shape_n_heads as n_heads,          -- attention (query) heads
        shape_n_kv_heads as n_kv_heads,    -- key/value heads (GQA; MLA: = n_heads)
        shape_head_dim as head_dim,        -- per head (MLA: mean of q-k and v)
        shape_attention_layers as attention_layers,  -- layers with full attention (null: all)
        shape_vocab as vocab,              -- vocabulary, tokens
        shape_ffn_matrices as ffn_matrices,                      -- 3 gated (SwiGLU), 2 plain
        shape_moe_experts as moe_experts,  -- routed experts per MoE layer
        shape_moe_top_k as moe_top_k,      -- routed experts per token
        shape_moe_expert_ffn as moe_expert_ffn, -- FFN size of one expert
        shape_moe_shared_experts as moe_shared_experts, -- always-on experts per MoE layer
        shape_moe_dense_layers as moe_dense_layers,  -- layers without experts
        case
            when not (active_params_b < params_b) then null
            when shape_moe_experts is null or shape_moe_top_k is null or shape_moe_expert_ffn is null
                then 'estimated'
            when moe_given_by_row then 'row'
            else 'reference'
        end as moe_shape_source,                     -- row | reference | estimated
        machine_scale_up_domain_gpus as scale_up_domain_gpus, -- GPUs sharing NVLink/xGMI
        intra_node_bw_gbps_unidir as scale_up_gbps_per_gpu, -- GB/s per direction
        machine_scale_out_gbps_per_gpu as scale_out_gbps_per_gpu, -- Gb/s per GPU (network)
        scale_up_defaulted,  -- true: the GPU system's default domain
        scale_out_defaulted,  -- true: the GPU system's default network
        -- the MoE model's family (leave-one-MoE-family-out CV: a family's sizes and releases held out together);
        -- null for a dense model
        case
            when not (active_params_b < params_b) then null
            when model_name ilike '%deepseek%' then 'DeepSeek'
            when model_name ilike '%qwen%' then 'Qwen'
            when model_name ilike '%gpt-oss%' or model_name ilike '%gpt_oss%' then 'GPT-OSS'
            when regexp_matches(model_name, '(?i)llama[-_ ]?4') then 'Llama-4'
            when model_name ilike '%grok%' then 'Grok'
            when model_name ilike '%mixtral%' then 'Mixtral'
            when model_name ilike '%kimi%' then 'Kimi'
            when model_name ilike '%nemotron%' then 'Nemotron'
            else coalesce(
                    nullif(regexp_extract(regexp_replace(model_name, '^.*/', ''), '^[A-Za-z]+', 0), ''),
                    'other'
                )
        end as moe_family
    from per_token
)

select * exclude (_feature_row) from final order by _feature_row
