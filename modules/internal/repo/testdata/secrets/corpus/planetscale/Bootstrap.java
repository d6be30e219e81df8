public class Bootstrap {
    static {
        System.setProperty("planetscale.api.token", "psca@@le_tkn_gtu9l3j52fvrw9c4xqpvarldy_f4_1r6");
    }
}
