-- nvtx_layer(domain, stack, depth): the layer a kernel or memop belongs to at NVTX depth `depth` (1 = outermost):
-- 'domain:outer/.../name' over the first `depth` names of its stack (fewer when the stack is shallower), or
-- '(no NVTX range)' outside every range. The one label rule of layer_summary, compare_layers and time_roofline,
-- so their layers join on equal text.
CREATE MACRO nvtx_layer(domain, stack, depth) AS
CASE WHEN stack IS NULL OR len(stack) = 0 THEN '(no NVTX range)'
    ELSE domain || ':' || array_to_string(stack[1:least(depth, len(stack))], '/')
END;
