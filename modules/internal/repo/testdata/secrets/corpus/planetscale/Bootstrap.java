public class Bootstrap {
    static {
        System.setProperty("planetscale.password", "psca@@le_pw_ruwshrsem4xza7wu4z6l_zfsej2sr-q35ddceyr0j3w");
    }
}
