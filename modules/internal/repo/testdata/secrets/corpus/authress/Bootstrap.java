public class Bootstrap {
    static {
        System.setProperty("authress.service.client.access.key", "sc_u@@m0swdsdvu.p9fn.acc_i54t13d6bs.r_f9hc2-pfcftib_d0-1rz540jgpib1_8ccys9-3");
    }
}
