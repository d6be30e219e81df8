public class Bootstrap {
    static {
        System.setProperty("digitalocean.pat", "dop_@@v1_d3a0969acb2b4d29e2ce32ba1d87e30ddaefebfd575e362864c3d8d616d69daa");
    }
}
