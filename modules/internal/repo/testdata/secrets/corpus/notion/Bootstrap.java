public class Bootstrap {
    static {
        System.setProperty("notion.api.token", "ntn_@@456476151729vWBETTAc421EJdkefwPvw8dfNt2oszUa7v");
    }
}
