-- The columns of an AWS offer CSV's header (after the 5-line preamble), without reading the rows.
describe select * from read_csv(
        $path, skip = 5, header = true, all_varchar = true, delim = ',', quote = '"', escape = '"'
    )
