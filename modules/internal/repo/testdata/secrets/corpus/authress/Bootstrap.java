public class Bootstrap {
    static {
        System.setProperty("authress.service.client.access.key", "sc_z@@rpn75hc9v.h8c7.acc_155nsslo8f.b-anvm57ycnird9m124xmk0n7ptc4zeqs9af8uf6");
    }
}
