public class Bootstrap {
    static {
        System.setProperty("bitbucket.client.secret", "viu8@@fkvabbe171j3lgsrkjv5e6bsb83p9zsln67dtms3tlbobw6y7isqw13543s0");
    }
}
