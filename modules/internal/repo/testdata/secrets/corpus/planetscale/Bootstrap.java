public class Bootstrap {
    static {
        System.setProperty("planetscale.password", "psca@@le_pw_1ueye8f3jsn472edk74am8rp_be6-huiniyokffq5ll");
    }
}
