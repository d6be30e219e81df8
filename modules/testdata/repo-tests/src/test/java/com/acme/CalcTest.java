package com.acme;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;

class CalcTest {
    @Test
    void adds() {
        assertEquals(3, new Calc().add(1, 2));
    }

    @Test
    @Disabled("flaky")
    void overflows() {}
}
