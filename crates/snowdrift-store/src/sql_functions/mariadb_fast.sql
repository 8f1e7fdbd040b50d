-- The fast path of one ID, inlined into snowdrift_id for each generator: one UPDATE of
-- the lease row moves the counter (the first of the clock's tick if the clock moved on)
-- and renews the lease, only while the lease has not ended and the row says neither its
-- mark nor the reservation check is due; anything else goes to {{PREFIX}}_id().
    WHEN {{NAME}} THEN
      SET now_ms = {{CLOCK}};
      SET now_t = IF(now_ms < {{EPOCH}}, -1, (now_ms - {{EPOCH}}) DIV {{UNIT}});
      IF @snowdrift_{{SLUG}}_w IS NOT NULL AND now_t >= 0 THEN
        UPDATE {{PREFIX}}_lease
          SET counter = (@snowdrift_{{SLUG}}_last := GREATEST(counter,
                LEAST((@snowdrift_{{SLUG}}_first := GREATEST(counter + 1, (({{EXT}} << {{TIME_BITS}}) | now_t) << {{SEQ_BITS}})),
                      (({{EXT}} << {{TIME_BITS}}) | GREATEST(0, LEAST(now_t + {{LEAD_TICKS}}, (mark_ms + 1 - {{EPOCH}}) DIV {{UNIT}} - 1, {{MAX_TICK}}))) << {{SEQ_BITS}} | {{SEQ_MASK}}))),
              expires_ms = now_ms + {{TTL_MS}}
          WHERE worker_id = @snowdrift_{{SLUG}}_w AND holder = CONNECTION_ID() AND expires_ms > now_ms
            AND now_ms < check_ms AND now_ms < mark_ms - {{HALF_WINDOW_MS}};
        IF ROW_COUNT() = 1 AND @snowdrift_{{SLUG}}_last >= @snowdrift_{{SLUG}}_first THEN
          SET c = @snowdrift_{{SLUG}}_last;
          SET w = @snowdrift_{{SLUG}}_w;
          RETURN ((((c >> {{SEQ_BITS}}) << {{HIGH_SHIFT}}) | (c & {{SEQ_MASK}})) << {{SEQ_SHIFT}}) | ({{NODE_EXPR}});
        END IF;
      END IF;
      RETURN {{PREFIX}}_id();
