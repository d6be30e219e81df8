public class Bootstrap {
    static {
        System.setProperty("typeform.api.token", "tfp_@@-5t5q4t5abu2dwsddngf2=ugtygn8_7b1xa0zec37fjyiluoi9w8smt0360");
    }
}
