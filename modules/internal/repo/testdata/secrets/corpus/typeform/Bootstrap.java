public class Bootstrap {
    static {
        System.setProperty("typeform.api.token", "tfp_@@sl5rlxvxsgokkb_mv_g_a0fa5c1yvjiyiyz9oio8h0yxi_4cqcrkguispvc");
    }
}
