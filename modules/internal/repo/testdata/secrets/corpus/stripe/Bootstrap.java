public class Bootstrap {
    static {
        System.setProperty("stripe.access.token", "sk_t@@est_q6aonk7rkywcp5oysft8m1a8h0vzh2");
    }
}
