public class Bootstrap {
    static {
        System.setProperty("authress.service.client.access.key", "sc_u@@dh81clumg.tti4.acc_s5h8x7147s.v511_lyscb7-6qwe95l9u-y7y-18gqpbini6c0v2");
    }
}
