public class Bootstrap {
    static {
        System.setProperty("sendinblue.api.token", "xkey@@sib-af758821abafeb679988813ba8c76ab1c1066b5e83a1465c98639e8be07d9996-qzzab3g4mfp1sczk");
    }
}
