public class Bootstrap {
    static {
        System.setProperty("sendgrid.api.token", "SG.4@@t4ou2a-5z9c-mtlngw6d109q8aa2dvoio0qlw1xkj_q0ooi8pag7rxrh3g=na2eg9");
    }
}
