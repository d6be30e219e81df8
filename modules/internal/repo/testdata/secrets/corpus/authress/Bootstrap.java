public class Bootstrap {
    static {
        System.setProperty("authress.service.client.access.key", "sc_i@@7cf8rlrzt.586o.acc_8u28u9r7lb.z97rrx3xnaz5ctd3hz8mjfmkhvyxidvjt1rfw6se");
    }
}
