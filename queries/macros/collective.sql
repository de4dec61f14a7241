-- Rules on communication kernels (the collectives of a distributed job).

-- is_collective(name): the kernel is a collective of NCCL or RCCL (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`,
-- `ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t`, NCCL's symmetric kernels `ncclSymkDevKernel_*`, RCCL's
-- `rcclGenericKernel`) or one of torch's symmetric-memory collectives (c10d::symmetric_memory:
-- `one_shot_all_reduce_kernel`, `two_shot_all_reduce_kernel`, `multimem_all_reduce_kernel`,
-- `multimem_one_shot_all_reduce_kernel`, `multimem_all_gather_kernel`, ...), by its (demangled) name.
CREATE MACRO is_collective(name) AS
coalesce(
    regexp_matches(name, '(^|[^A-Za-z0-9_])(nccl|rccl)[A-Za-z]*Kernel')
    OR regexp_matches(
        name, '(^|[^A-Za-z0-9_])(multimem_|one_shot_|two_shot_)[A-Za-z0-9_]*(all_reduce|all_gather|reduce_scatter|reduce)[A-Za-z0-9_]*_kernel'
    ),
    false
);
