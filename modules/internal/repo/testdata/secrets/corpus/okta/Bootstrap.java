public class Bootstrap {
    static {
        System.setProperty("okta.access.token", "00fW@@kOjwwL9xiFd-Vfgm_ePATIRxVj852Iblbb1DS_");
    }
}
