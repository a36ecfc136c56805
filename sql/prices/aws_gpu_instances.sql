-- GPU shapes of AWS instance types (data/reference/aws_instance_gpus.csv), for sql/prices/aws_offer_*.sql.
create or replace temp table aws_gpu_shapes as
select instance_type, gpu_name, gpu_count, gpu_memory_gb
from read_csv($shapes_path, header = true, all_varchar = true, comment = '#')
